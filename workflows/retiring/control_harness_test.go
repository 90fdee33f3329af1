package retiring

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/pipeline"
)

// controlFake stands in for the activities of the in-chat commands
// answered from the store (/context, /compact, /export) and of heartbeat
// turns.
type controlFake struct {
	mu sync.Mutex
	// checklist is what ReadHeartbeatChecklist returns.
	checklist string
	// compactFails fails CompactTranscript for these models.
	compactFails map[string]string
	compacts     []pipeline.CompactRequest
	exports      []pipeline.ExportRequest
	contexts     []pipeline.ContextRequest
	schedules    []string // "upsert <spec> by <who>", "delete", "trigger", "describe"
}

func registerControl(env *testsuite.TestWorkflowEnvironment, c *controlFake) {
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.checklist, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityReadHeartbeatChecklist})
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.CompactRequest) (pipeline.CompactResult, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.compacts = append(c.compacts, req)
		if typ, ok := c.compactFails[req.Model]; ok {
			return pipeline.CompactResult{}, temporal.NewNonRetryableApplicationError("provider said no", typ, nil)
		}
		return pipeline.CompactResult{Summarized: 12, SummaryTokens: 140, Model: req.Model}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityCompactTranscript})
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.ExportRequest) (pipeline.ExportResult, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.exports = append(c.exports, req)
		return pipeline.ExportResult{Messages: 4, AsFile: true}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityExportTranscript})
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.ContextRequest) (pipeline.ContextReport, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.contexts = append(c.contexts, req)
		return pipeline.ContextReport{PersonaTokens: 20, SystemTokens: 60, TranscriptStored: 9, TranscriptMessages: 7, TranscriptTokens: 300, Budget: 8000}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityDescribeContext})
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.HeartbeatRequest) (pipeline.HeartbeatInfo, error) {
		c.note("upsert " + req.Spec.String() + " by " + req.By)
		return pipeline.HeartbeatInfo{On: true, Spec: req.Spec.String(), NextRun: testStart.Add(30 * time.Minute)}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityUpsertHeartbeat})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) error {
		c.note("delete")
		return nil
	}, activity.RegisterOptions{Name: pipeline.ActivityDeleteHeartbeat})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) error {
		c.note("trigger")
		return temporal.NewNonRetryableApplicationError("this chat has no heartbeat; set one with /heartbeat every 30m", pipeline.ErrNoHeartbeat, nil)
	}, activity.RegisterOptions{Name: pipeline.ActivityTriggerHeartbeat})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) (pipeline.HeartbeatInfo, error) {
		c.note("describe")
		return pipeline.HeartbeatInfo{}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityDescribeHeartbeat})
}

func (c *controlFake) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schedules = append(c.schedules, s)
}

// withControl registers the control activities over c.
func withControl(c *controlFake) func(*fakePlatform) {
	return func(p *fakePlatform) { registerControl(p.env, c) }
}

func tickAt(env *testsuite.TestWorkflowEnvironment, at time.Duration, id string) {
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalHeartbeat, pipeline.HeartbeatTick{ID: id, ScheduledAt: testStart.Add(at)})
	}, at)
}

func ownerInbound(id, text string) pipeline.Inbound {
	in := inbound(id, text)
	in.SenderID = "boss"
	return in
}

// countingMetrics is a client.MetricsHandler that counts each counter by
// its name and tags ("name k=v k=v", tags sorted).
type countingMetrics struct {
	mu     sync.Mutex
	tags   string
	counts map[string]int64
	root   *countingMetrics
}

func (m *countingMetrics) base() *countingMetrics {
	if m.root != nil {
		return m.root
	}
	return m
}

func (m *countingMetrics) WithTags(tags map[string]string) client.MetricsHandler {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	text := m.tags
	for _, k := range keys {
		text += " " + k + "=" + tags[k]
	}
	return &countingMetrics{tags: text, root: m.base()}
}

func (m *countingMetrics) Counter(name string) client.MetricsCounter {
	return counterFunc(func(n int64) {
		root := m.base()
		root.mu.Lock()
		defer root.mu.Unlock()
		root.counts[name+m.tags] += n
	})
}

func (m *countingMetrics) Gauge(string) client.MetricsGauge {
	return client.MetricsNopHandler.Gauge("")
}
func (m *countingMetrics) Timer(string) client.MetricsTimer {
	return client.MetricsNopHandler.Timer("")
}

func (m *countingMetrics) count(key string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[key]
}

type counterFunc func(int64)

func (f counterFunc) Inc(n int64) { f(n) }
