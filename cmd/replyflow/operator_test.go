package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

func TestSessionsQuery(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ExecutionStatus = "Running"`, sessionsQuery(sessionsOptions{}, now))
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ReplyflowChannel = "telegram"`, sessionsQuery(sessionsOptions{all: true, channel: "telegram"}, now))
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ReplyflowChannel = "telegram" AND ReplyflowChat = "-100123"`, sessionsQuery(sessionsOptions{all: true, channel: "telegram", chat: "-100123"}, now))
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ExecutionStatus = "Running" AND ReplyflowState = "waiting_user"`, sessionsQuery(sessionsOptions{state: "waiting_user"}, now))
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ExecutionStatus = "Running" AND (ReplyflowState = "delivery_failed" OR `+
		`(ReplyflowState IN ("thinking", "delivering", "debouncing", "gating") AND ReplyflowLastInboundAt < "2026-11-21T11:50:00Z") OR `+
		`(ReplyflowQueueDepth > 0 AND ReplyflowLastInboundAt < "2026-11-21T11:50:00Z") OR `+
		`(ReplyflowState IS NULL AND StartTime < "2026-11-21T11:50:00Z"))`,
		sessionsQuery(sessionsOptions{stuck: true, stuckAfter: 10 * time.Minute}, now))
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ExecutionStatus = "Running" AND ReplyflowHeldUntil > "2026-11-21T12:00:00Z"`,
		sessionsQuery(sessionsOptions{held: true}, now))
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, "3m5s ago", ago("2026-11-21T11:56:55.2Z", now))
	assert.Equal(t, "-", ago("-", now))
}

func TestRenderSnapshot(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	snap := workflows.Snapshot{
		Session:  pipeline.SessionKey{Channel: "webchat", Chat: "demo"},
		Status:   workflows.StatusThinking,
		Settings: pipeline.Settings{Models: []string{"demo/echo"}},
		Queue:    pipeline.QueueSettings{Mode: pipeline.QueueCollect, Debounce: pipeline.Duration(time.Second), Cap: 20, Drop: pipeline.DropOld},
		Queued:   []workflows.BatchView{{Mode: pipeline.QueueCollect, MessageIDs: []string{"m3"}}},
		Active:   &workflows.ActiveView{TurnID: "r.2", Phase: workflows.PhaseModel, MessageIDs: []string{"m2"}, StartedAt: now.Add(-3 * time.Second)},
		LastTurn: &workflows.TurnRecord{TurnID: "r.2", Outcome: "running"},
		Reactions: []workflows.Reaction{
			{MessageID: "m1", State: pipeline.ReactionDone, ClearAt: now.Add(45 * time.Second)},
		},
		Counters:      workflows.Counters{Inbound: 3, Turns: 2, Runs: 1},
		HistoryLength: 57,
	}
	out := oneSpace(renderSnapshot(snap, now))
	for _, want := range []string{
		"Session session:webchat:demo",
		"State thinking",
		"Queue collect, debounce 1s, cap 20, drop old; 1 batch(es) waiting",
		"Running turn r.2, model, step 1, messages m2, for 3s",
		"Queued #1 m3 (collect)",
		"Reaction done on m1, clears in 45s",
		"History 57 events in run 1",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "Fix", "a running turn needs no fix")
}

func TestRenderSnapshotSaysHowToFixWhatWaitsForAnOperator(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	snap := workflows.Snapshot{
		Session: pipeline.SessionKey{Channel: "telegram", Account: "bot", Chat: "42"},
		Status:  workflows.StatusDeliveryFailed,
		Active:  &workflows.ActiveView{TurnID: "r.4", Phase: workflows.PhaseParked, MessageIDs: []string{"m9"}, StartedAt: now.Add(-time.Hour)},
		LastTurn: &workflows.TurnRecord{TurnID: "r.4", Outcome: "delivery_failed",
			Error: "delivery of chunk 1/1 failed (PlatformUnavailable): telegram: Forbidden: bot was blocked by the user"},
		Proposals: []workflows.Proposal{
			{ID: "p1", Call: pipeline.ToolCall{Name: "pay"}, Summary: "pay bob 5", Requester: "telegram:7", ExpiresAt: now.Add(10 * time.Minute), Status: workflows.ProposalPending},
			{ID: "p0", Call: pipeline.ToolCall{Name: "pay"}, Summary: "pay eve 9", Status: workflows.ProposalRejected},
		},
	}
	out := oneSpace(renderSnapshot(snap, now))
	for _, want := range []string{
		"Last turn delivery_failed, turn r.4: delivery of chunk 1/1 failed (PlatformUnavailable): telegram: Forbidden: bot was blocked by the user",
		"Fix the cause in Last turn, then: replyflow retry session:telegram:bot:42",
		"Proposal p1: pay (pay bob 5), asked by telegram:7, expires in 10m0s; decide: replyflow approve|reject session:telegram:bot:42 p1",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "p0:", "a decided proposal waits for nobody")
}

// oneSpace folds the table's column padding, which depends on the widest key.
func oneSpace(s string) string { return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ") }

func TestOperatorVerbsAgainstTheServer(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	s := startStack(t, testConfig(t))
	s.startWorker(nil)
	chat := uniqueChat("operator")
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"o1","sender_id":"alice","text":"hello"}`)
	require.Equal(t, 202, code)
	events.collectUntil(t, 30*time.Second, isReplyTo("o1"))

	var list bytes.Buffer
	require.Eventually(t, func() bool {
		list.Reset()
		return sessionsCommand(context.Background(), s.cfg, []string{"--channel", "webchat"}, &list, s.logger) == nil &&
			bytes.Contains(list.Bytes(), []byte("session:webchat:"+chat))
	}, 10*time.Second, 100*time.Millisecond, "sessions lists the session: %s", &list)

	var view bytes.Buffer
	require.NoError(t, inspectCommand(context.Background(), s.cfg, []string{"webchat:" + chat}, &view, s.logger))
	assert.Contains(t, oneSpace(view.String()), "Session session:webchat:"+chat)
	assert.Contains(t, view.String(), "inbound 1, duplicates 0, turns 1")
}
