package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadyzSaysWhatFails(t *testing.T) {
	tel, err := New()
	require.NoError(t, err)
	srv := httptest.NewServer(tel.Mux())
	t.Cleanup(srv.Close)
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}

	code, _ := get("/readyz")
	assert.Equal(t, http.StatusOK, code, "nothing to check is ready")
	tel.AddCheck("ok", func(context.Context) error { return nil })
	tel.AddCheck("store", func(context.Context) error { return errors.New("the store is read-only") })
	tel.AddCheck("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	code, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, map[string]any{"store": "the store is read-only", "slow": "no answer within 2s"}, body["failing"])
	code, body = get("/healthz")
	assert.Equal(t, http.StatusOK, code, "alive whatever readiness says")
	assert.Equal(t, true, body["alive"])
	assert.Equal(t, []string{"ok", "slow", "store"}, tel.Names())
}

func TestReplyflowSeriesReachMetrics(t *testing.T) {
	tel, err := New()
	require.NoError(t, err)
	tel.MetricsHandler().WithTags(map[string]string{"channel": "webchat"}).Counter("replyflow_test_things").Inc(3)
	rec := httptest.NewRecorder()
	tel.Mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Contains(t, rec.Body.String(), `replyflow_test_things{channel="webchat"`)
	assert.Regexp(t, `replyflow_test_things\{channel="webchat"[^}]*\} 3`, rec.Body.String())
}

// The checks of /readyz are series too, read at each scrape: an alert
// sees a process that is not ready, and which check fails.
func TestReadinessIsASeries(t *testing.T) {
	tel, err := New()
	require.NoError(t, err)
	scrape := func() string {
		rec := httptest.NewRecorder()
		tel.Mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	assert.Contains(t, scrape(), "\nreplyflow_ready 1\n", "nothing to check is ready")

	var temporalDown atomic.Bool
	tel.AddCheck("temporal", func(context.Context) error {
		if temporalDown.Load() {
			return errors.New("Temporal is not reachable")
		}
		return nil
	})
	tel.AddCheck("stopping", func(context.Context) error { return nil })
	page := scrape()
	assert.Contains(t, page, "\nreplyflow_ready 1\n")
	assert.Contains(t, page, `replyflow_ready_check{check="temporal"} 1`)
	assert.Contains(t, page, `replyflow_ready_check{check="stopping"} 1`)

	temporalDown.Store(true)
	page = scrape()
	assert.Contains(t, page, "\nreplyflow_ready 0\n")
	assert.Contains(t, page, `replyflow_ready_check{check="temporal"} 0`)
	assert.Contains(t, page, `replyflow_ready_check{check="stopping"} 1`, "only the failing check is 0")
}

// Requests to /readyz that come while its checks run share that run: a
// flood of them costs one Temporal health call at a time. The outcome is
// not kept once the run ends, so the next request sees a change at once.
func TestConcurrentReadyzShareOneRunOfTheChecksAndNothingIsKept(t *testing.T) {
	tel, err := New()
	require.NoError(t, err)
	srv := httptest.NewServer(tel.Mux())
	t.Cleanup(srv.Close)
	var calls atomic.Int32
	release := make(chan struct{})
	var broken atomic.Bool
	broken.Store(true)
	tel.AddCheck("temporal", func(ctx context.Context) error {
		calls.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		if broken.Load() {
			return errors.New("Temporal is not reachable: dial 10.0.0.7:7233")
		}
		return nil
	})
	get := func() (int, map[string]any) {
		resp, err := http.Get(srv.URL + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}

	const requests = 20
	codes := make([]int, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() { codes[i], _ = get() })
	}
	require.Eventually(t, func() bool {
		tel.runMu.Lock()
		defer tel.runMu.Unlock()
		return tel.running != nil && tel.running.callers == requests
	}, 10*time.Second, time.Millisecond, "every request waits on the run under way")
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load(), "one health call for %d requests", requests)
	for _, code := range codes {
		assert.Equal(t, http.StatusServiceUnavailable, code)
	}

	broken.Store(false)
	code, _ := get()
	assert.Equal(t, http.StatusOK, code, "a change shows at once")
	assert.Equal(t, int32(2), calls.Load())
	broken.Store(true)
	code, _ = get()
	assert.Equal(t, http.StatusServiceUnavailable, code)
}

// On an address anyone reaches, /readyz names what fails and tells why
// only to the requests the process lets see it.
func TestAPublicReadyzTellsWhyOnlyToTheOperator(t *testing.T) {
	tel, err := New()
	require.NoError(t, err)
	tel.AddCheck("ok", func(context.Context) error { return nil })
	tel.AddCheck("temporal", func(context.Context) error { return errors.New("Temporal is not reachable: dial 10.0.0.7:7233") })
	h := tel.PublicReadyHandler(func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer op" })
	get := func(auth string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		return rec.Code, body
	}
	code, body := get("")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, map[string]any{"temporal": Withheld}, body["failing"])
	code, body = get("Bearer wrong")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, map[string]any{"temporal": Withheld}, body["failing"])
	code, body = get("Bearer op")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, map[string]any{"temporal": "Temporal is not reachable: dial 10.0.0.7:7233"}, body["failing"])
}
