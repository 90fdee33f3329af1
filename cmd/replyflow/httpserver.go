package main

import (
	"net/http"
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
		Handler:           handler,
		ReadHeaderTimeout: min(timeout, 10*time.Second),
		ReadTimeout:       timeout,
		WriteTimeout:      timeout,
		IdleTimeout:       4 * timeout,
	}
}
