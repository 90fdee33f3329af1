package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusSaysWhatIsNotReady(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"ready":true}`)) }))
	t.Cleanup(ready.Close)
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"ready":false,"failing":{"platforms":"telegram is connecting"}}`))
	}))
	t.Cleanup(unready.Close)
	cfg := testConfig(t)

	var out strings.Builder
	require.NoError(t, statusCommand(context.Background(), cfg, []string{"--ready", ready.URL + "/readyz"}, &out, testLogger(t, "info")))
	assert.Equal(t, "Temporal        reachable\n"+strings.TrimPrefix(ready.URL, "http://")+" ready\n", out.String())

	out.Reset()
	err := statusCommand(context.Background(), cfg, []string{"--ready", ready.URL + "/readyz", "--ready", unready.URL + "/readyz"}, &out, testLogger(t, "info"))
	assert.EqualError(t, err, "1 of 3 not ready")
	assert.Contains(t, out.String(), "NOT READY (503): platforms: telegram is connecting")
}
