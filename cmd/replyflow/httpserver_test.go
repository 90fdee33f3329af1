package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNonCanonicalPathsAreRefusedNotRedirected(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chats/{chat}/messages", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.PathValue("chat"))) })
	mux.HandleFunc("GET /{$}", func(http.ResponseWriter, *http.Request) {})
	h := canonicalPaths(mux)
	for _, c := range []struct {
		path     string
		want     int
		wantChat string
	}{
		{path: "/api/chats/../messages", want: http.StatusBadRequest},
		{path: "/api/chats/./messages", want: http.StatusBadRequest},
		{path: "/api/chats//messages", want: http.StatusBadRequest},
		{path: "/api/chats/x/../../y/messages", want: http.StatusBadRequest},
		{path: "/api/chats/x/messages/..", want: http.StatusBadRequest},
		{path: "/api/chats/x/messages", want: http.StatusOK, wantChat: "x"},
		{path: "/api/chats/x.y..z/messages", want: http.StatusOK, wantChat: "x.y..z"},
		// Encoded, they reach the route, whose ID check refuses them.
		{path: "/api/chats/%2e%2e/messages", want: http.StatusOK, wantChat: ".."},
		{path: "/api/chats/a%2Fb/messages", want: http.StatusOK, wantChat: "a/b"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, c.path, nil))
		assert.Equal(t, c.want, rec.Code, "%s: %s", c.path, rec.Body)
		if c.want == http.StatusBadRequest {
			assert.Contains(t, rec.Body.String(), "canonical form", c.path)
		} else {
			assert.Equal(t, c.wantChat, rec.Body.String(), c.path)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "the root is canonical")
}
