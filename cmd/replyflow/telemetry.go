package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/replyflow/replyflow/workers/telemetry"
)

// checkStarting names the readiness check that fails until the process
// has started.
const checkStarting = "starting"

// started passes the check that held tel's readiness while the process
// started.
func started(tel *telemetry.Telemetry) {
	tel.AddCheck(checkStarting, func(context.Context) error { return nil })
}

// startTelemetry serves /metrics, /healthz and /readyz on
// REPLYFLOW_METRICS_ADDR and makes cfg's Temporal clients report to it.
// The returned function stops the server.
func startTelemetry(cfg *Config, logger *slog.Logger) (stop func(), err error) {
	tel, err := telemetry.New()
	if err != nil {
		return nil, err
	}
	// Not ready until the worker or the gateway has started and added
	// its own checks (started), which a probe would otherwise not wait
	// for: an empty set of checks passes.
	tel.AddCheck(checkStarting, func(context.Context) error { return errors.New("the process is starting") })
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s (REPLYFLOW_METRICS_ADDR): %w", cfg.MetricsAddr, err)
	}
	srv := newHTTPServer(tel.Mux(), cfg.HTTPTimeout)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("Metrics server stopped; /metrics and /readyz are gone until a restart", "addr", cfg.MetricsAddr, "error", err)
		}
	}()
	cfg.tel = tel
	logger.Info("Metrics and health served", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = tel.Shutdown(ctx)
	}, nil
}
