package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/replyflow/replyflow/workers/telemetry"
	"github.com/replyflow/replyflow/workflows"
)

// otlpCollector is a fake OTLP/HTTP trace endpoint: it keeps each span's
// name under its trace ID.
type otlpCollector struct {
	mu     sync.Mutex
	traces map[string][]string
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, span := range ss.Spans {
				id := hex.EncodeToString(span.TraceId)
				c.traces[id] = append(c.traces[id], span.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// traceWith is the names of the first trace holding every name of want.
func (c *otlpCollector) traceWith(want ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, names := range c.traces {
		has := map[string]bool{}
		for _, n := range names {
			has[n] = true
		}
		all := true
		for _, w := range want {
			all = all && has[w]
		}
		if all {
			return names
		}
	}
	return nil
}

func TestAMessageIsOneTraceFromTheGatewayToTheDeliveredChunk(t *testing.T) {
	collector := &otlpCollector{traces: map[string][]string{}}
	endpoint := httptest.NewServer(collector)
	t.Cleanup(endpoint.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.URL)
	require.True(t, telemetry.TracingConfigured())
	ic, shutdown, err := telemetry.Tracing(context.Background(), "replyflow-test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = shutdown(context.Background()) })

	cfg := testConfig(t)
	cfg.tracing = ic
	c, err := dialTemporal(context.Background(), cfg, temporalServer.FrontendHostPort(), testLogger(t, "info"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := startStackOn(t, cfg, c)
	s.startWorker(nil)
	chat := uniqueChat("tr-trace")
	events := subscribe(t, s.baseURL, chat)
	code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("m1"))

	// (The workflow's own span ends with the session, hours later.)
	want := []string{"SignalWithStartWorkflow:" + workflows.ChatSessionName, "HandleSignal:inbound", "RunActivity:AgentTurn", "RunActivity:Deliver"}
	if !assert.Eventually(t, func() bool { return collector.traceWith(want...) != nil }, 30*time.Second, 200*time.Millisecond,
		"one trace holds the gateway's signal, the session, the model attempt and the delivery") {
		collector.mu.Lock()
		defer collector.mu.Unlock()
		t.Fatalf("the traces seen: %v", collector.traces)
	}
}
