package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/workers/codec"
)

// codecKeys are the configured codec keys; nil when encryption is off.
func (c Config) codecKeys() ([]codec.Key, error) {
	if strings.TrimSpace(c.CodecKeys) == "" {
		return nil, nil
	}
	return codec.ParseKeys(c.CodecKeys)
}

func (c Config) validateCodec() []error {
	var errs []error
	if _, err := c.codecKeys(); err != nil {
		errs = append(errs, err)
	}
	for _, o := range c.CodecUIOrigins {
		if _, err := codec.ParseOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", codec.EnvUIOrigins, err))
		}
	}
	if adapters.Placeholder(c.CodecToken) {
		errs = append(errs, fmt.Errorf("%s is the example's placeholder, with which anyone who reaches the codec server decrypts every session: set a secret of your own (`openssl rand -base64 32`)", codec.EnvToken))
	}
	if c.DevCodecPort < 1 || c.DevCodecPort > 65535 {
		errs = append(errs, fmt.Errorf("REPLYFLOW_DEV_CODEC_PORT must be a port from 1 to 65535, got %d", c.DevCodecPort))
	}
	return errs
}

// applyCodec makes a client, and the workers built on it, encrypt every
// payload and failure with the configured keys; without keys it changes
// nothing.
func (c Config) applyCodec(opts *client.Options) error {
	keys, err := c.codecKeys()
	if err != nil || keys == nil {
		return err
	}
	return codec.SetOn(opts, keys, c.CodecCompress)
}

// sealStore makes the store encrypt the files' bytes and transcripts it
// keeps with the codec's keys; without keys it changes nothing.
func (c Config) sealStore(db *store.Store) error {
	keys, err := c.codecKeys()
	if err != nil || keys == nil {
		return err
	}
	blobs, err := codec.NewBlobs(keys)
	if err != nil {
		return err
	}
	db.SetSealer(blobs)
	return nil
}

// warnIfClearText says, at a worker's or gateway's start, that history
// is not encrypted, and how to change that.
func warnIfClearText(cfg Config, logger *slog.Logger) {
	if cfg.CodecKeys != "" {
		return
	}
	logger.Warn("Temporal history is stored in clear text: messages, replies and tool calls are readable by anyone who can read Temporal. "+
		"Set REPLYFLOW_CODEC_KEYS=<id>:<key> on the worker, the gateway and the operator commands (see docs/security.md, \"Encryption\")",
		"make_a_key", "openssl rand -base64 32")
}

// explainEncrypted adds what to do to the error of a client without the
// keys that met an encrypted payload.
func explainEncrypted(err error) error {
	if errors.Is(err, converter.ErrEncodingIsNotSupported) && strings.Contains(err.Error(), codec.EncodingEncrypted) {
		return fmt.Errorf("%w: the session is encrypted; set REPLYFLOW_CODEC_KEYS to the worker's keys (replyflow dev keeps its key in .replyflow/codec.keys)", err)
	}
	return err
}

// repeated is a repeatable string flag.
type repeated []string

func (o *repeated) String() string     { return strings.Join(*o, ",") }
func (o *repeated) Set(v string) error { *o = append(*o, v); return nil }

// codecServerCommand is `replyflow codec-server`: the codec over HTTP for
// the Temporal UI and CLI, with the same keys as the worker.
func codecServerCommand(ctx context.Context, cfg Config, args []string, logger *slog.Logger) error {
	fs := flag.NewFlagSet("codec-server", flag.ContinueOnError)
	listen := fs.String("listen", cfg.CodecServerAddr, "address to serve on (REPLYFLOW_CODEC_SERVER_ADDR)")
	var origins repeated
	fs.Var(&origins, "ui-origin", "a Temporal UI origin allowed to call it, such as http://localhost:8080; repeatable (REPLYFLOW_CODEC_UI_ORIGINS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("usage: replyflow codec-server [--listen host:port] [--ui-origin URL]...")
	}
	if len(origins) == 0 {
		origins = cfg.CodecUIOrigins
	}
	keys, err := cfg.codecKeys()
	if err != nil {
		return err
	}
	if keys == nil {
		return errors.New("the codec server needs REPLYFLOW_CODEC_KEYS: the same keys as the worker and the gateway")
	}
	if err := codec.CheckListen(*listen, cfg.CodecToken); err != nil {
		return err
	}
	codecs, err := codec.Codecs(keys, cfg.CodecCompress)
	if err != nil {
		return err
	}
	h, err := codec.NewHandler(codecs, codec.HandlerOptions{Token: cfg.CodecToken, Origins: origins})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen for the codec server on %s (--listen, REPLYFLOW_CODEC_SERVER_ADDR): %w", *listen, err)
	}
	endpoint := "http://" + ln.Addr().String() + "/{namespace}"
	logger.Info("Codec server running", "endpoint", endpoint, "keys", strings.Join(codec.KeyIDs(keys), ","),
		"token_required", cfg.CodecToken != "", "ui_origins", strings.Join(origins, ","))
	if cfg.CodecToken != "" && len(origins) > 0 {
		// The UI sends no token of its own: a browser signs in once and
		// the UI sends the cookie (TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true).
		logger.Info("Sign each operator's browser in once, with the token, so the Temporal UI can decrypt (its TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true)",
			"sign_in", "http://"+ln.Addr().String()+"/signin")
	}
	if len(origins) == 0 {
		logger.Warn("No UI origin is allowed, so a browser (the Temporal UI) cannot call the codec server; the CLI can. Add --ui-origin http://<UI host:port>")
	}
	return serveUntilDone(ctx, ln, h)
}

// serveUntilDone serves h on ln until ctx is done.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := newHTTPServer(h, time.Minute)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("HTTP server on %s stopped: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	return nil
}
