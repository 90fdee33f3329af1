package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process's /readyz answers 503 until its worker or gateway has
// started: with no check of its own added yet, it would pass.
func TestReadyzWaitsForTheProcessToStart(t *testing.T) {
	cfg := Config{MetricsAddr: "127.0.0.1:0", HTTPTimeout: 5 * time.Second}
	stop, err := startTelemetry(&cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer stop()
	rec := func() (int, string) {
		w := httptest.NewRecorder()
		cfg.tel.Mux().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return w.Code, w.Body.String()
	}
	code, body := rec()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "the process is starting")
	started(cfg.tel)
	code, _ = rec()
	assert.Equal(t, http.StatusOK, code)
}
