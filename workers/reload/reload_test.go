package reload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/replyflow/replyflow/workflows"
)

// fakeTemporal lists open sessions page by page and records the signals.
type fakeTemporal struct {
	mu       sync.Mutex
	open     []string
	closed   map[string]bool // listed, but gone by the signal
	failOn   string          // a signal that fails with Unavailable, once
	queries  []string
	signals  []string
	requests []workflows.ReloadRequest
}

func (f *fakeTemporal) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, req.Query)
	start := 0
	if len(req.NextPageToken) > 0 {
		fmt.Sscan(string(req.NextPageToken), &start)
	}
	end := min(start+int(req.PageSize), len(f.open))
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, id := range f.open[start:end] {
		resp.Executions = append(resp.Executions, &workflow.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
	}
	if end < len(f.open) {
		resp.NextPageToken = []byte(fmt.Sprint(end))
	}
	return resp, nil
}

func (f *fakeTemporal) SignalWorkflow(_ context.Context, id, runID, name string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if runID != "" || name != workflows.SignalReload {
		return fmt.Errorf("unexpected signal %s to run %q", name, runID)
	}
	if id == f.failOn {
		f.failOn = ""
		return serviceerror.NewUnavailable("the cluster is restarting")
	}
	if f.closed[id] {
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	f.signals = append(f.signals, id)
	f.requests = append(f.requests, arg.(workflows.ReloadRequest))
	return nil
}

func (f *fakeTemporal) signalled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.signals...)
}

func sessions(n int) []string {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("session:webchat:c%04d", i))
	}
	return ids
}

// countingPace counts the waits: one per signal is the rate's bound.
type countingPace struct{ waits int }

func (p *countingPace) Wait(context.Context) error { p.waits++; return nil }

func TestAllSignalsEveryOpenSessionOfItsTaskQueueOncePaced(t *testing.T) {
	open := sessions(2*pageSize + 7) // three pages
	f := &fakeTemporal{open: open, closed: map[string]bool{open[3]: true, open[pageSize+1]: true}}
	s := Sessions{Client: f, TaskQueue: "replyflow-eu"}
	pace := &countingPace{}

	n, err := s.all(context.Background(), workflows.ReloadRequest{By: "alice", Reason: "new allow list"}, pace)
	require.NoError(t, err)
	assert.Equal(t, Count{Signalled: len(open) - 2, Closed: 2}, n, "a session gone since it was listed is counted, not an error")
	assert.Len(t, f.signalled(), len(open)-2)
	assert.Equal(t, len(open), pace.waits, "each signal waits its turn at the rate")
	assert.Len(t, f.queries, 3, "page by page")
	for _, q := range f.queries {
		assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ExecutionStatus = "Running" AND TaskQueue = "replyflow-eu"`, q)
	}
	assert.Equal(t, workflows.ReloadRequest{By: "alice", Reason: "new allow list"}, f.requests[0])
}

func TestAllStopsAtAFailedSignalAndSaysWhere(t *testing.T) {
	open := sessions(5)
	f := &fakeTemporal{open: open, failOn: open[2]}
	n, err := Sessions{Client: f, TaskQueue: "replyflow"}.all(context.Background(), workflows.ReloadRequest{}, &countingPace{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), open[2])
	assert.Equal(t, 2, n.Signalled)
}

func TestOneSaysWhenTheSessionIsNotRunning(t *testing.T) {
	f := &fakeTemporal{closed: map[string]bool{"session:webchat:gone": true}}
	s := Sessions{Client: f, TaskQueue: "replyflow"}
	require.NoError(t, s.One(context.Background(), "session:webchat:open", workflows.ReloadRequest{By: "bob"}))
	err := s.One(context.Background(), "session:webchat:gone", workflows.ReloadRequest{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "session:webchat:gone is not running")
}

func TestFingerprintIsStableChangesWithTheSettingsAndShowsNoneOfThem(t *testing.T) {
	type settings struct {
		Models    []string
		AllowFrom []string
		ByChannel map[string]string
	}
	a := settings{Models: []string{"openai/gpt-x"}, AllowFrom: []string{"webchat:alice"}, ByChannel: map[string]string{"telegram": "collect", "slack": "steer"}}
	fa, err := Fingerprint(a)
	require.NoError(t, err)
	for range 20 { // map order varies from one iteration to the next
		again, err := Fingerprint(settings{Models: []string{"openai/gpt-x"}, AllowFrom: []string{"webchat:alice"}, ByChannel: map[string]string{"slack": "steer", "telegram": "collect"}})
		require.NoError(t, err)
		assert.Equal(t, fa, again)
	}
	b := a
	b.AllowFrom = []string{"webchat:alice", "webchat:bob"}
	fb, err := Fingerprint(b)
	require.NoError(t, err)
	assert.NotEqual(t, fa, fb)
	assert.True(t, strings.HasPrefix(fa, "sha256:"), fa)
	for _, clear := range []string{"alice", "gpt", "collect", "telegram"} {
		assert.NotContains(t, fa, clear)
	}
}

// memFingerprints is the store's fingerprint table in memory.
type memFingerprints struct {
	mu       sync.Mutex
	recorded map[string]string
	writes   int
}

func (m *memFingerprints) SettingsFingerprint(_ context.Context, q string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recorded[q], nil
}

func (m *memFingerprints) RecordSettingsFingerprint(_ context.Context, q, fp string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recorded == nil {
		m.recorded = map[string]string{}
	}
	m.recorded[q] = fp
	m.writes++
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestAStartWithChangedSettingsReloadsEveryOpenSessionThenRecords(t *testing.T) {
	ctx := context.Background()
	open := sessions(4)
	f := &fakeTemporal{open: open}
	store := &memFingerprints{}
	s := Sessions{Client: f, TaskQueue: "replyflow"}
	req := workflows.ReloadRequest{By: "worker", Reason: "settings changed"}

	// The first start of this release knows no fingerprint: every open
	// session may hold settings from before it.
	n, err := s.applyOnce(ctx, store, "sha256:one", req, &countingPace{}, quiet())
	require.NoError(t, err)
	assert.Equal(t, 4, n.Signalled)
	assert.Equal(t, "sha256:one", store.recorded["replyflow"])

	// The same settings again (a restart, a second worker): nothing.
	n, err = s.applyOnce(ctx, store, "sha256:one", req, &countingPace{}, quiet())
	require.NoError(t, err)
	assert.Equal(t, Count{}, n)
	assert.Len(t, f.signalled(), 4, "no signal when nothing changed")
	assert.Len(t, f.queries, 1, "and no visibility query either: one store read is all an unchanged start costs")

	// New settings, and the pass fails midway (as a worker killed then
	// would): the old fingerprint stays, so the next try signals every
	// session again, and only then records the new one.
	f.failOn = open[2]
	_, err = s.applyOnce(ctx, store, "sha256:two", req, &countingPace{}, quiet())
	require.Error(t, err)
	assert.Equal(t, "sha256:one", store.recorded["replyflow"], "not recorded before every signal went out")
	n, err = s.applyOnce(ctx, store, "sha256:two", req, &countingPace{}, quiet())
	require.NoError(t, err)
	assert.Equal(t, 4, n.Signalled, "the next try starts over: a reload twice is harmless")
	assert.Equal(t, "sha256:two", store.recorded["replyflow"])
	assert.Equal(t, 2, store.writes)
}

func TestAfterStartTriesAgainUntilDoneAndStopsWithTheWorker(t *testing.T) {
	// A store that fails once (locked, unreachable): AfterStart tries
	// again after a pause, and returns once the fingerprint is recorded.
	store := &flakyStore{fails: 1}
	f := &fakeTemporal{open: sessions(3)}
	s := Sessions{Client: f, TaskQueue: "replyflow"}
	s.AfterStart(context.Background(), store, "sha256:x", workflows.ReloadRequest{}, quiet())
	assert.Equal(t, "sha256:x", store.recorded["replyflow"])
	assert.Len(t, f.signalled(), 3)

	// A worker that stops returns at once and records nothing: its next
	// start does it all again.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := &flakyStore{}
	s.AfterStart(ctx, stopped, "sha256:y", workflows.ReloadRequest{}, quiet())
	assert.Empty(t, stopped.recorded)
}

// flakyStore fails its first reads, then keeps fingerprints in memory.
type flakyStore struct {
	memFingerprints
	fails int
}

func (s *flakyStore) SettingsFingerprint(ctx context.Context, q string) (string, error) {
	if s.fails > 0 {
		s.fails--
		return "", errors.New("database is locked")
	}
	return s.memFingerprints.SettingsFingerprint(ctx, q)
}
