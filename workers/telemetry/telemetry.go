// Package telemetry is what a replyflow process shows its operators
// besides its logs: Prometheus metrics on REPLYFLOW_METRICS_ADDR (the
// Temporal SDK's own, through the SDK's OpenTelemetry metrics handler,
// and replyflow's, through the same handler), and the health endpoints
// /healthz (the process is alive) and /readyz (it can do its work), whose
// checks are series too (replyflow_ready, replyflow_ready_check).
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
	"maps"
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
	// running is the run of the checks under way, shared by every caller
	// that asks meanwhile (under runMu); nil between runs.
	runMu   sync.Mutex
	running *checkRun
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
	reg.MustRegister(readiness{t})
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
	_, failed := t.ready(ctx)
	return failed
}

// checkRun is one run of the checks and, once done is closed, its
// outcome.
type checkRun struct {
	done   chan struct{}
	names  []string
	failed map[string]string
	// callers counts those who share the run (under runMu).
	callers int
}

// ready returns the checks' names with the failures, from a run of the
// checks that it shares with every caller that asks while it runs: a
// burst of probes, or anyone flooding /readyz on the gateway's public
// address, costs one Temporal health call at a time, not one each. A
// run's outcome is not kept once it ends, so the next caller sees a
// change at once. The run does not end with the caller that started it
// (each check is bounded by checkTimeout); a caller whose ctx ends
// stops waiting.
func (t *Telemetry) ready(ctx context.Context) (names []string, failed map[string]string) {
	t.runMu.Lock()
	r := t.running
	if r == nil {
		r = &checkRun{done: make(chan struct{})}
		t.running = r
		go func() {
			r.names, r.failed = t.runChecks(context.WithoutCancel(ctx))
			t.runMu.Lock()
			t.running = nil
			t.runMu.Unlock()
			close(r.done)
		}()
	}
	r.callers++
	t.runMu.Unlock()
	select {
	case <-r.done:
		return r.names, maps.Clone(r.failed)
	case <-ctx.Done():
		return nil, map[string]string{"readiness": "not known: " + ctx.Err().Error()}
	}
}

// runChecks runs every check and returns their names with the failures.
func (t *Telemetry) runChecks(ctx context.Context) (names []string, failed map[string]string) {
	t.mu.Lock()
	checks := make(map[string]Check, len(t.checks))
	for name, c := range t.checks {
		checks[name] = c
	}
	t.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed = map[string]string{}
	for name, check := range checks {
		names = append(names, name)
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
	sort.Strings(names)
	return names, failed
}

// The process's readiness as series, read at each scrape from the same
// checks as /readyz, so that an alert sees what an orchestrator sees
// without a probe of its own.
const (
	// MetricReady is 1 while /readyz answers ready, else 0.
	MetricReady = "replyflow_ready"
	// MetricReadyCheck is 1 while the check named by its label passes,
	// else 0: check="temporal" is 0 while the Temporal frontend does not
	// answer this process.
	MetricReadyCheck = "replyflow_ready_check"
)

var (
	readyDesc      = prometheus.NewDesc(MetricReady, "1 while every readiness check of the process passes (GET /readyz answers 200), else 0.", nil, nil)
	readyCheckDesc = prometheus.NewDesc(MetricReadyCheck, "1 while the named readiness check passes, else 0.", []string{"check"}, nil)
)

// readiness runs the checks at each scrape: each within checkTimeout,
// all at once, so a scrape waits for them at most checkTimeout.
type readiness struct{ t *Telemetry }

func (r readiness) Describe(ch chan<- *prometheus.Desc) {
	ch <- readyDesc
	ch <- readyCheckDesc
}

func (r readiness) Collect(ch chan<- prometheus.Metric) {
	names, failed := r.t.ready(context.Background())
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, boolValue(len(failed) == 0))
	for _, name := range names {
		_, bad := failed[name]
		ch <- prometheus.MustNewConstMetric(readyCheckDesc, prometheus.GaugeValue, boolValue(!bad), name)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
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
func (t *Telemetry) ReadyHandler() http.Handler { return t.PublicReadyHandler(nil) }

// Withheld is what a public /readyz (PublicReadyHandler) says of a
// failing check to a caller not shown why.
const Withheld = "failing; why is shown to the operator only (replyflow status, or /readyz on REPLYFLOW_METRICS_ADDR)"

// PublicReadyHandler is ReadyHandler for an address anyone may reach:
// it names the failing checks, and says why each fails (which holds
// addresses and other systems' error text) only to a request that
// detail approves; nil approves every request.
func (t *Telemetry) PublicReadyHandler(detail func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed := t.Ready(r.Context())
		if len(failed) == 0 {
			writeJSON(w, http.StatusOK, map[string]any{"ready": true})
			return
		}
		if detail != nil && !detail(r) {
			for name := range failed {
				failed[name] = Withheld
			}
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
