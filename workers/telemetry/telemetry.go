// Package telemetry is what a replyflow process shows its operators
// besides its logs: Prometheus metrics on REPLYFLOW_METRICS_ADDR (the
// Temporal SDK's own, through the SDK's OpenTelemetry metrics handler,
// and replyflow's, through the same handler), and the health endpoints
// /healthz (the process is alive) and /readyz (it can do its work).
//
// It holds no business rules and touches no workflow state: the workflow
// records its series through workflow.GetMetricsHandler, which the SDK
// keeps quiet during replay, and the gateway through the handler it is
// given.
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Telemetry is one process's metrics and readiness.
type Telemetry struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  client.MetricsHandler

	mu     sync.Mutex
	checks map[string]Check
	// meterErrors counts metrics the meter refused.
	meterErrors atomic.Int64
}

// Check says whether one thing the process needs works; nil is ready.
type Check func(ctx context.Context) error

// checkTimeout bounds one readiness check: a probe must answer quickly.
const checkTimeout = 2 * time.Second

// New builds the metrics pipeline: an OpenTelemetry meter provider that
// exports to its own Prometheus registry (with the Go runtime's series).
func New() (*Telemetry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t := &Telemetry{registry: reg, provider: provider, checks: map[string]Check{}}
	t.handler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("replyflow"),
		// A metric the meter refuses is a bug to see, not a reason to
		// stop a worker: it is counted and the call goes on.
		OnError: func(error) { t.meterErrors.Add(1) },
	})
	return t, nil
}

// MetricsHandler is what Temporal clients take (client.Options.MetricsHandler),
// and what replyflow records its own series with.
func (t *Telemetry) MetricsHandler() client.MetricsHandler { return t.handler }

// AddCheck adds (or replaces) a readiness check.
func (t *Telemetry) AddCheck(name string, c Check) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checks[name] = c
}

// Ready runs every check at once, each within checkTimeout, and returns
// the failures by name.
func (t *Telemetry) Ready(ctx context.Context) map[string]string {
	t.mu.Lock()
	checks := make(map[string]Check, len(t.checks))
	for name, c := range t.checks {
		checks[name] = c
	}
	t.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := map[string]string{}
	for name, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			defer cancel()
			if err := check(cctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("no answer within %s", checkTimeout)
				}
				mu.Lock()
				failed[name] = err.Error()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// Mux serves /metrics, /healthz and /readyz.
func (t *Telemetry) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"alive": true})
	})
	mux.Handle("GET /readyz", t.ReadyHandler())
	return mux
}

// ReadyHandler answers 200 when every check passes, else 503 with what
// failed, so an orchestrator stops sending work and a person sees why.
func (t *Telemetry) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := t.Ready(r.Context())
		if len(failed) == 0 {
			writeJSON(w, http.StatusOK, map[string]any{"ready": true})
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "failing": failed})
	})
}

// Names are the checks registered, sorted (for a person's status).
func (t *Telemetry) Names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.checks))
	for n := range t.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Shutdown flushes and stops the meter provider.
func (t *Telemetry) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// TemporalCheck is ready while the Temporal frontend answers.
func TemporalCheck(c client.Client) Check {
	return func(ctx context.Context) error {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("Temporal is not reachable: %w", err)
		}
		return nil
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
