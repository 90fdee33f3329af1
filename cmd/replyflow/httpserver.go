package main

import (
	"net/http"
	"path"
	"strings"
	"time"
)

// newHTTPServer is the gateway's HTTP server. Every request must arrive
// whole (headers and body) and be answered within timeout, and an idle
// keep-alive connection is closed after four times that, so a client that
// stalls holds a connection for a bounded time. The web chat's event
// streams are meant to stay open: they lift these deadlines for themselves
// and bound each write instead (webchat.ServerConfig.StreamWriteTimeout).
func newHTTPServer(handler http.Handler, timeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           canonicalPaths(handler),
		ReadHeaderTimeout: min(timeout, 10*time.Second),
		ReadTimeout:       timeout,
		WriteTimeout:      timeout,
		IdleTimeout:       4 * timeout,
	}
}

// canonicalPaths refuses a path with . or .. segments or doubled slashes
// with 400 and a reason. http.ServeMux would redirect it to its cleaned
// form instead (307, the method kept), which sends a message or a webhook
// call to a route its sender never named; no client of the gateway has a
// reason to send such a path. Encoded dots (%2e) are left to the routes,
// whose ID checks refuse them with a reason of their own.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); p != "" && !isCanonical(p) {
			http.Error(w, "the path is not in canonical form (it has . or .. segments or doubled slashes); send the path without them", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isCanonical reports whether p is its own cleaned form, as ServeMux
// cleans: path.Clean, keeping a trailing slash.
func isCanonical(p string) bool {
	if p[0] != '/' {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}
