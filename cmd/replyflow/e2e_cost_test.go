package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// What a simple web chat turn costs the Temporal server, counted from the
// session's history as the bench counts it (harness.CostOf): the figures
// the design promises must not rise unnoticed.

// TestSimpleTurnCostWithDebounceOff: with debounce off, a simple turn is
// at most 7 billable actions and 19 history events.
func TestSimpleTurnCostWithDebounceOff(t *testing.T) {
	t.Parallel()
	cost := simpleTurnCost(t, "cost-debounce-off", 0)
	assert.LessOrEqual(t, cost.Total(), 7, "billable actions of a simple turn, debounce off:\n%s", cost)
	assert.LessOrEqual(t, cost.Events, 19, "history events of a simple turn, debounce off:\n%s", cost)
}

// TestSimpleTurnCostWithTheDevDefaults: with the defaults `make dev` runs
// (a 1 s debounce window, 👀 shown while it waits), a simple turn is at
// most 8 billable actions.
func TestSimpleTurnCostWithTheDevDefaults(t *testing.T) {
	t.Parallel()
	cost := simpleTurnCost(t, "cost-dev-defaults", time.Second)
	assert.LessOrEqual(t, cost.Total(), 8, "billable actions of a simple turn, make dev's defaults:\n%s", cost)
}

// simpleTurnCost runs two simple turns in a new web chat session (a chat
// of prefix), with replyflow's defaults but debounce and those the bench
// also changes, and returns what the second cost: the session's start and
// the first turn's clear fall outside it.
//
// The demo model answers at once (as in the bench), so no ✍️ is shown;
// the done reaction is cleared a second after the reply rather than the
// default minute: its clear is one timer and one local activity either
// way.
func simpleTurnCost(t *testing.T, prefix string, debounce time.Duration) harness.TurnCost {
	defaults, err := readConfig("replyflow_test_unset")
	require.NoError(t, err)
	cfg := testConfig(t)
	// testConfig shortens these for other tests' sake; a user runs the
	// defaults.
	cfg.ReactionCoalesce = defaults.ReactionCoalesce
	cfg.TypingInterval = defaults.TypingInterval
	cfg.TurnHeartbeatTimeout = defaults.TurnHeartbeatTimeout
	cfg.Debounce = debounce
	cfg.ReactionClearDelay = time.Second
	cfg.DemoModelDelay = 0
	require.NoError(t, cfg.validate())
	s := startStack(t, cfg)
	s.startWorker(nil)
	chat := uniqueChat(prefix)
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"c1","sender_id":"alice","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isClearOf("c1"))
	run, before := s.idleHistory(key)

	code, body = s.post(chat, `{"message_id":"c2","sender_id":"alice","text":"hello again"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isClearOf("c2"))
	require.Equal(t, 1, countMessages(seen), "one reply to the second message")
	runAfter, after := s.idleHistory(key)
	require.Equal(t, run, runAfter, "the second turn ran in the first's run (no continue-as-new inside what is measured)")
	require.Greater(t, len(after), len(before))

	cost := harness.CostOf(after[len(before):])
	t.Logf("simple web chat turn, debounce %s: %s", debounce, cost)
	return cost
}

// idleHistory waits until the session is idle again (no reaction shown
// or owed, no workflow task or activity pending) and returns its current
// run's ID and history.
func (s *stack) idleHistory(key pipeline.SessionKey) (runID string, events []*historypb.HistoryEvent) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var why string
	idle := func() bool {
		v, err := s.client.QueryWorkflow(ctx, key.WorkflowID(), "", workflows.QueryState)
		if err != nil {
			why = "query: " + err.Error()
			return false
		}
		var snap workflows.Snapshot
		if err := v.Get(&snap); err != nil {
			why = "query: " + err.Error()
			return false
		}
		if snap.Status != workflows.StatusIdle || len(snap.Reactions) > 0 || len(snap.Pending) > 0 {
			why = "status " + string(snap.Status) + ", reactions or changes still owed"
			return false
		}
		d, err := s.client.DescribeWorkflowExecution(ctx, key.WorkflowID(), "")
		if err != nil {
			why = "describe: " + err.Error()
			return false
		}
		if d.PendingWorkflowTask != nil || len(d.PendingActivities) > 0 {
			why = "a workflow task or an activity is pending"
			return false
		}
		runID = d.WorkflowExecutionInfo.GetExecution().GetRunId()
		return true
	}
	for !idle() {
		select {
		case <-ctx.Done():
			s.t.Fatalf("the session %s did not become idle: %s", key.WorkflowID(), why)
		case <-time.After(50 * time.Millisecond):
		}
	}
	iter := s.client.GetWorkflowHistory(ctx, key.WorkflowID(), runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(s.t, err, "read the history of %s", key.WorkflowID())
		events = append(events, ev)
	}
	return runID, events
}
