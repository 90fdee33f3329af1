package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters/hostcheck"
	"github.com/replyflow/replyflow/workers/codec"
)

// devKeysFile is where `replyflow dev` keeps the key it made, in its dev
// directory, in REPLYFLOW_CODEC_KEYS's format.
const devKeysFile = "codec.keys"

// devCodecKeys gives replyflow dev its codec keys: REPLYFLOW_CODEC_KEYS
// when set, else the key in <DevDir>/codec.keys, made on the first run and
// used again by every later one, so sessions stay readable between runs.
// It returns where the keys came from, for the banner.
func devCodecKeys(cfg Config) (Config, string, error) {
	if cfg.CodecKeys != "" {
		return cfg, "REPLYFLOW_CODEC_KEYS", nil
	}
	path := filepath.Join(cfg.DevDir, devKeysFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = newDevKeysFile(path)
	}
	if err != nil {
		return cfg, "", fmt.Errorf("the dev codec key %s: %w", path, err)
	}
	cfg.CodecKeys = strings.TrimSpace(string(data))
	if _, err := cfg.codecKeys(); err != nil {
		return cfg, "", fmt.Errorf("the dev codec key %s is damaged (restore it; a new key cannot read the sessions the old one wrote): %w", path, err)
	}
	return cfg, path, nil
}

// newDevKeysFile writes a new key to path, readable by its owner only.
func newDevKeysFile(path string) ([]byte, error) {
	key, err := codec.GenerateKey("dev-" + time.Now().UTC().Format("20060102"))
	if err != nil {
		return nil, err
	}
	data := []byte(codec.FormatKeys([]codec.Key{key}) + "\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return data, nil
}

// startDevCodec serves the codec for the dev server's Web UI until stop:
// on loopback, with no token (the dev UI has no login to pass one), and
// only to the UI's own origins. It returns the endpoint to give the UI.
func startDevCodec(cfg Config, logger *slog.Logger) (endpoint string, stop func(), err error) {
	keys, err := cfg.codecKeys()
	if err != nil {
		return "", nil, err
	}
	codecs, err := codec.Codecs(keys, cfg.CodecCompress)
	if err != nil {
		return "", nil, err
	}
	ui := strconv.Itoa(cfg.DevUIPort)
	h, err := codec.NewHandler(codecs, codec.HandlerOptions{Origins: []string{
		"http://" + net.JoinHostPort(cfg.DevTemporalIP, ui), "http://localhost:" + ui, "http://127.0.0.1:" + ui,
	}})
	if err != nil {
		return "", nil, err
	}
	h = loopbackHostOnly(h)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.DevCodecPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listen for the dev codec endpoint on %s (set REPLYFLOW_DEV_CODEC_PORT to another port): %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveUntilDone(ctx, ln, h); err != nil {
			logger.Warn("The dev codec endpoint stopped; the Temporal UI shows payloads encrypted until the next run", "error", err)
		}
	}()
	return "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

// loopbackHostOnly answers only requests addressed to a loopback name.
// The dev codec endpoint decodes for anyone who reaches it (no token), and
// a page whose own name resolves to 127.0.0.1 (DNS rebinding) would reach
// it from the browser, its origin checks notwithstanding (it is
// same-origin to itself).
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostcheck.Loopback(r.Host) {
			http.Error(w, fmt.Sprintf("replyflow dev's codec endpoint answers only requests addressed to %s, not to %q", hostcheck.Names, r.Host), http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
