package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestTheHeartbeatCommandCallsTheScheduleAndAnswersWithItsOutcome(t *testing.T) {
	info := pipeline.HeartbeatInfo{On: true, Spec: "every 30m"}
	tests := []struct {
		name     string
		in       pipeline.Inbound
		activity string
		output   any
		failure  *Failure
		answer   string
	}{
		{name: "shown to a member", in: said("u", "1", "/heartbeat"), activity: pipeline.ActivityDescribeHeartbeat, output: &info,
			answer: "Heartbeat: every 30m. Last: 2026-11-26 11:00 UTC: reported in the chat."},
		{name: "set by an owner", in: said("boss", "1", "/heartbeat every 30m"), activity: pipeline.ActivityUpsertHeartbeat, output: &info,
			answer: "Heartbeat: every 30m. Last: 2026-11-26 11:00 UTC: reported in the chat."},
		{name: "turned off", in: said("boss", "1", "/heartbeat off"), activity: pipeline.ActivityDeleteHeartbeat, answer: "Heartbeat off."},
		{name: "run now", in: said("boss", "1", "/heartbeat now"), activity: pipeline.ActivityTriggerHeartbeat,
			answer: "Heartbeat triggered: the checklist is looked at now."},
		{name: "none to turn off", in: said("boss", "1", "/heartbeat off"), activity: pipeline.ActivityDeleteHeartbeat,
			failure: &Failure{Type: pipeline.ErrNoHeartbeat, Message: "this chat has no heartbeat"}, answer: "⚠️ this chat has no heartbeat"},
		{name: "the schedule is down", in: said("boss", "1", "/heartbeat now"), activity: pipeline.ActivityTriggerHeartbeat,
			failure: &Failure{Type: "Unavailable", Message: "connection refused"},
			answer:  "⚠️ The heartbeat could not be changed right now (Unavailable); try again in a moment."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := commandEnv()
			c := ControlState{LastHeartbeat: &HeartbeatRecord{TickID: "t0", At: t0.Add(-time.Hour), Outcome: HeartbeatDelivered}}
			var r RepliesState
			got := command(t, env, &c, &r, CommandView{}, tt.in)
			require.Len(t, got.calls, 1)
			assert.Empty(t, got.answers, "answered once the schedule is")
			call := got.calls[0]
			assert.Equal(t, tt.activity, call.Activity)
			if tt.activity == pipeline.ActivityUpsertHeartbeat {
				req := call.Args[0].(pipeline.HeartbeatRequest)
				assert.Equal(t, "web:boss", req.By)
				assert.Equal(t, 30*time.Minute, req.Spec.Every.D())
			} else {
				assert.Equal(t, []any{env.Key}, call.Args)
			}
			done := split(t, r.Returned(env, Returned{Key: call.Key, Output: tt.output, Failure: tt.failure}))
			assert.Equal(t, []string{tt.answer}, done.answers)
			assert.Empty(t, r.Calls, "only the answer is under way")
		})
	}
}

func TestOnlyOwnersChangeTheHeartbeat(t *testing.T) {
	for _, text := range []string{"/heartbeat every 30m", "/heartbeat off", "/heartbeat now"} {
		var c ControlState
		var r RepliesState
		got := command(t, commandEnv(), &c, &r, CommandView{}, said("u", "1", text))
		assert.Equal(t, []string{"⚠️ Only owners may change the heartbeat."}, got.answers, text)
		assert.Empty(t, got.calls, text)
	}
}

// compactRun starts /compact and answers each attempt with the next of
// failures (nil: a summary), returning the models asked and what the
// last effects were.
func compactRun(t *testing.T, env Env, view CommandView, failures ...*Failure) ([]string, outcome, *RepliesState) {
	t.Helper()
	var c ControlState
	r := &RepliesState{}
	got := command(t, env, &c, r, view, said("u", "cmd", "/compact the budget"))
	var asked []string
	for _, f := range failures {
		require.Len(t, got.calls, 1)
		require.True(t, r.Compacting(), "turns wait while the transcript is replaced")
		req := got.calls[0].Args[0].(pipeline.CompactRequest)
		assert.Equal(t, "the budget", req.Focus)
		assert.Equal(t, "cmd", req.Key, "a retried attempt starts no second transcript")
		assert.Equal(t, "u", req.Sender, "it counts against who asked, every attempt")
		asked = append(asked, req.Model)
		out := &pipeline.CompactResult{Summarized: 12, SummaryTokens: 300, Model: req.Model}
		got = split(t, r.Returned(env, Returned{Key: got.calls[0].Key, Output: out, Failure: f}))
	}
	return asked, got, r
}

func TestCompactFallsBackAlongTheChainAsATurnDoes(t *testing.T) {
	env := commandEnv(func(s *pipeline.Settings) { s.Models = []string{"a/1", "b/2", "c/3"} })
	rateLimited := &Failure{Type: pipeline.ErrRateLimited}
	filtered := &Failure{Type: pipeline.ErrContentFilter}

	asked, got, r := compactRun(t, env, CommandView{}, rateLimited, nil)
	assert.Equal(t, []string{"a/1", "b/2"}, asked)
	assert.Equal(t, []Event{CompactionFinished{Compacted: true}}, got.events)
	assert.Equal(t, []string{"Compacted: 12 message(s) became a summary of about 300 tokens (b/2). The conversation goes on from it."}, got.answers)
	assert.False(t, r.Compacting())

	asked, got, _ = compactRun(t, env, CommandView{}, rateLimited, filtered)
	assert.Equal(t, []string{"a/1", "b/2"}, asked, "a failure that does not move on ends the chain")
	assert.Equal(t, []Event{CompactionFinished{}}, got.events)
	assert.Equal(t, []string{"⚠️ The conversation could not be compacted (a/1: RateLimited, b/2: ContentFilter); it is unchanged."}, got.answers)

	asked, got, _ = compactRun(t, env, CommandView{}, rateLimited, rateLimited, &Failure{Type: "Canceled"})
	assert.Equal(t, []string{"a/1", "b/2", "c/3"}, asked)
	assert.Equal(t, []string{"⚠️ The conversation could not be compacted (a/1: RateLimited, b/2: RateLimited, c/3: Timeout); it is unchanged."}, got.answers)

	asked, got, _ = compactRun(t, env, CommandView{Saved: pipeline.SessionSettings{ModelOverride: "x/9"}}, rateLimited)
	assert.Equal(t, []string{"x/9"}, asked, "a chosen model is strict")
	assert.Equal(t, []Event{CompactionFinished{}}, got.events)
}

func TestCompactIsRefusedWhileATurnRunsOrWaitsOrAnotherCompacts(t *testing.T) {
	env := commandEnv()
	_, got, _ := compactRun(t, env, CommandView{Busy: true})
	assert.Equal(t, []string{"⚠️ A turn is running or waiting; send /compact again once it is answered."}, got.answers)
	assert.Empty(t, got.calls)

	var c ControlState
	var r RepliesState
	require.Len(t, command(t, env, &c, &r, CommandView{}, said("u", "1", "/compact")).calls, 1)
	again := command(t, env, &c, &r, CommandView{}, said("u", "2", "/compact"))
	assert.Equal(t, []string{"⚠️ A turn is running or waiting; send /compact again once it is answered."}, again.answers)
}

func TestContextAndExportAnswerFromTheirActivities(t *testing.T) {
	env := commandEnv()
	var c ControlState
	var r RepliesState
	in := said("u", "m1", "/context")
	in.ChatType = pipeline.ChatGroup
	got := command(t, env, &c, &r, CommandView{Model: "demo/echo", Observed: 2, ObservedTokens: 40}, in)
	require.Len(t, got.calls, 1)
	req := pipeline.ContextRequest{Session: env.Key, Group: true, Observed: 2, ObservedTokens: 40}
	assert.Equal(t, []any{req}, got.calls[0].Args)
	report := &pipeline.ContextReport{Budget: 8000}
	done := split(t, r.Returned(env, Returned{Key: got.calls[0].Key, Output: report}))
	assert.Equal(t, []string{pipeline.RenderContext(*report, req, "demo/echo")}, done.answers)

	got = command(t, env, &c, &r, CommandView{}, said("u", "m2", "/context"))
	done = split(t, r.Returned(env, Returned{Key: got.calls[0].Key, Failure: &Failure{Type: "Timeout"}}))
	assert.Equal(t, []string{"⚠️ The context could not be read right now (Timeout); try again in a moment."}, done.answers)

	tests := []struct {
		name    string
		result  pipeline.ExportResult
		failure *Failure
		answers []string
		events  []Event
	}{
		{name: "sent", result: pipeline.ExportResult{Messages: 4, AsFile: true},
			events: []Event{ReactionsWanted{Refs: []msgRef{{ID: "x1"}}, State: pipeline.ReactionDone}}},
		{name: "empty", answers: []string{"Nothing to export: the conversation is empty."}},
		{name: "failed", failure: &Failure{Type: "PlatformRejected"}, answers: []string{"⚠️ The export could not be sent (PlatformRejected); try again later."}},
	}
	for _, tt := range tests {
		t.Run("export "+tt.name, func(t *testing.T) {
			var r RepliesState
			got := command(t, env, &c, &r, CommandView{}, said("u", "x1", "/export"))
			require.Len(t, got.calls, 1)
			assert.Equal(t, []any{pipeline.ExportRequest{Session: env.Key, IdempotencyKey: env.Key.WorkflowID() + "/export/x1", ReplyTo: "x1"}}, got.calls[0].Args)
			assert.Equal(t, time.Minute, got.calls[0].Timeout, "a document gets at least a minute")
			done := split(t, r.Returned(env, Returned{Key: got.calls[0].Key, Output: &tt.result, Failure: tt.failure}))
			assert.Equal(t, tt.answers, done.answers)
			assert.Equal(t, tt.events, done.events)
		})
	}
}

func TestACommandPastTheCallBoundIsToldToComeAgain(t *testing.T) {
	env := commandEnv()
	var c ControlState
	var r RepliesState
	for range maxCallsUnderWay {
		require.Len(t, command(t, env, &c, &r, CommandView{}, said("u", "1", "/context")).calls, 1)
	}
	got := command(t, env, &c, &r, CommandView{}, said("u", "2", "/export"))
	assert.Equal(t, []string{tooManyCalls}, got.answers)
	assert.Empty(t, got.calls)
}
