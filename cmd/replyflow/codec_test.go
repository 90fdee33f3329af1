package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

func TestCodecSettingsAreChecked(t *testing.T) {
	cfg := testConfig(t)
	cfg.CodecKeys = "k1:tooshort"
	cfg.CodecUIOrigins = []string{"localhost:8080"}
	cfg.DevCodecPort = 0
	err := cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `REPLYFLOW_CODEC_KEYS entry 1 (key ID "k1")`)
	assert.NotContains(t, err.Error(), "tooshort", "key material stays out of errors")
	assert.Contains(t, err.Error(), "REPLYFLOW_CODEC_UI_ORIGINS")
	assert.Contains(t, err.Error(), "REPLYFLOW_DEV_CODEC_PORT")
}

func TestCodecTokenPlaceholderIsRefused(t *testing.T) {
	cfg := testConfig(t)
	cfg.CodecToken = "change-me"
	err := cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REPLYFLOW_CODEC_TOKEN is the example's placeholder")
	cfg.CodecToken = "a-real-secret"
	assert.NoError(t, cfg.validate())
}

func TestCodecServerCommandRefusesUnsafeSettings(t *testing.T) {
	cfg := testConfig(t)
	quiet := testLogger(t, "info")
	ctx := context.Background()
	assert.ErrorContains(t, codecServerCommand(ctx, cfg, nil, quiet), "needs REPLYFLOW_CODEC_KEYS")
	cfg.CodecKeys = codecKeyEntry(t, "k1")
	assert.ErrorContains(t, codecServerCommand(ctx, cfg, []string{"--listen", "0.0.0.0:0"}, quiet),
		"set REPLYFLOW_CODEC_TOKEN, or listen on a loopback address")
	assert.ErrorContains(t, codecServerCommand(ctx, cfg, []string{"--listen", "127.0.0.1:0", "--ui-origin", "nope"}, quiet), "UI origin")
}

func TestCodecServerCommandServesWithTokenAndOrigins(t *testing.T) {
	cfg := testConfig(t)
	cfg.CodecKeys, cfg.CodecToken = codecKeyEntry(t, "k1"), "cx-server-token"
	registerConfigSecrets(cfg)
	port, err := harness.FreePort()
	require.NoError(t, err)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- codecServerCommand(ctx, cfg, []string{"--listen", "127.0.0.1:" + strconv.Itoa(port), "--ui-origin", "http://ui.example:8080"},
			testLogger(t, "debug"))
	}()
	preflight := func() (*http.Response, error) {
		req, err := http.NewRequest(http.MethodOptions, base+"/default/decode", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "http://ui.example:8080")
		return http.DefaultClient.Do(req)
	}
	require.Eventually(t, func() bool {
		resp, err := preflight()
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the codec server listens")
	resp, err := preflight()
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "http://ui.example:8080", resp.Header.Get("Access-Control-Allow-Origin"), "the --ui-origin is allowed")

	refused := decodeOverHTTP(t, base+"/default/decode", "Bearer wrong", nil, http.StatusUnauthorized)
	assert.Contains(t, refused, "REPLYFLOW_CODEC_TOKEN")
	decodeOverHTTP(t, base+"/default/decode", "Bearer cx-server-token", nil, http.StatusOK)

	cancel()
	require.NoError(t, <-done, "a stop is clean")
}

func TestDevMakesItsCodecKeyOnceAndKeepsIt(t *testing.T) {
	cfg := testConfig(t)
	cfg.DevDir = t.TempDir()
	first, from, err := devCodecKeys(cfg)
	require.NoError(t, err)
	path := filepath.Join(cfg.DevDir, "codec.keys")
	assert.Equal(t, path, from)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "only its owner reads the key")
	keys, err := first.codecKeys()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.True(t, strings.HasPrefix(keys[0].ID, "dev-"))

	again, _, err := devCodecKeys(cfg)
	require.NoError(t, err)
	assert.Equal(t, first.CodecKeys, again.CodecKeys, "the next run uses the same key")

	cfg.CodecKeys = codecKeyEntry(t, "mine")
	own, from, err := devCodecKeys(cfg)
	require.NoError(t, err)
	assert.Equal(t, cfg.CodecKeys, own.CodecKeys, "REPLYFLOW_CODEC_KEYS wins")
	assert.Equal(t, "REPLYFLOW_CODEC_KEYS", from)

	cfg.CodecKeys = ""
	require.NoError(t, os.WriteFile(path, []byte("dev-1:c2VjcmV0\n"), 0o600))
	_, _, err = devCodecKeys(cfg)
	assert.ErrorContains(t, err, "is damaged (restore it")
	assert.ErrorContains(t, err, "is 6 bytes; AES-256 needs 32")
	assert.NotContains(t, err.Error(), "c2VjcmV0", "key material stays out of errors")
}

// replyflow dev's codec endpoint has no token, so a page whose name
// resolves to 127.0.0.1 (DNS rebinding) must not reach it: only the
// loopback names are answered.
func TestDevCodecAnswersOnlyLoopbackHostNames(t *testing.T) {
	cfg := testConfig(t)
	cfg.DevDir = t.TempDir()
	cfg, _, err := devCodecKeys(cfg)
	require.NoError(t, err)
	cfg.DevCodecPort, err = harness.FreePort()
	require.NoError(t, err)
	endpoint, stop, err := startDevCodec(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(stop)
	port := strconv.Itoa(cfg.DevCodecPort)

	decode := func(host string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, endpoint+"/default/decode", strings.NewReader(`{"payloads":[]}`))
		require.NoError(t, err)
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	for _, host := range []string{"evil.example:" + port, "evil.example"} {
		code, body := decode(host)
		assert.Equal(t, http.StatusMisdirectedRequest, code, "Host %s: %s", host, body)
		assert.Contains(t, body, "localhost", "the reason names the names answered")
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		code, body := decode(host)
		assert.Equal(t, http.StatusOK, code, "Host %s: %s", host, body)
	}
}
