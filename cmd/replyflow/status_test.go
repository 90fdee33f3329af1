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

// status shows the gateway the web chat's bot token, to be told why a
// check fails, only at the addresses where this config sends it anyway.
func TestStatusSendsTheBotTokenOnlyToTheGatewaysOwnAddress(t *testing.T) {
	cfg := testConfig(t)
	cfg.WebchatAddr = "127.0.0.1:8181"
	webchatOf(cfg).URL = "http://gw.internal:8080"
	for address, want := range map[string]string{
		"http://127.0.0.1:8181/readyz":   "test-bot-token",
		"http://GW.internal:8080/readyz": "test-bot-token",
		"http://127.0.0.1:9090/readyz":   "",
		"https://127.0.0.1:8181/readyz":  "",
		"http://evil.example/readyz":     "",
		"::not a url":                    "",
	} {
		assert.Equal(t, want, operatorToken(cfg, address), address)
	}
	webchatOf(cfg).On = false
	assert.Empty(t, operatorToken(cfg, "http://127.0.0.1:8181/readyz"), "without the web chat there is no token")
}
