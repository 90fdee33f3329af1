package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// attrs are the search attributes an upsert sets, by name.
func attrs(updates []temporal.SearchAttributeUpdate) map[string]any {
	out := map[string]any{}
	for k, v := range temporal.NewSearchAttributes(updates...).GetUntypedValues() {
		out[k.GetName()] = v
	}
	return out
}

var (
	attrState     = workflows.AttrState.GetName()
	attrInboundAt = workflows.AttrLastInboundAt.GetName()
)

// publisher runs the loop's side of visibility: an upsert after each
// pass that changed something.
type publisher struct {
	v       VisibilityState
	upserts []map[string]any
}

func (p *publisher) pass(env Env, st *State) {
	if u := p.v.Updates(env, st); len(u) > 0 {
		p.upserts = append(p.upserts, attrs(u))
	}
}

// simpleTurn runs a message through a debounce window, the queue and a
// turn of one model step with a one-chunk reply, a pass per event.
func simpleTurn(t *testing.T, p *publisher, st *State, at time.Duration, id string) {
	t.Helper()
	env := turnEnv()
	env.Now = t0.Add(at)
	queue := debounce(time.Second)
	require.NotEmpty(t, st.Intake.Admit(env, msg(id, "u")))
	st.Intake.Hold(env, msg(id, "u"), queue)
	p.pass(env, st)
	require.Equal(t, workflows.StatusDebouncing, Status(env, st))

	env.Now = env.Now.Add(time.Second)
	ready := emitted[BatchReady](st.Intake.Close(env, pipeline.BufferKeyOf(msg(id, "u")), queue))
	require.Len(t, ready, 1)
	st.Queue.Dispatch(env, ready[0].Batch, st.Turn.View())
	next, ok := st.Queue.Next(env)
	require.True(t, ok)
	ask := only[AskModel](t, st.Turn.Begin(env, TurnStart{Messages: next.Messages, Refs: refsOf(next.Messages...), Text: next.Text}))
	p.pass(env, st)
	require.Equal(t, workflows.StatusThinking, Status(env, st), "the state query shows the turn")

	st.Turn.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{Reply: "hi", Model: "openai/a"}})
	p.pass(env, st)
	require.Equal(t, workflows.StatusThinking, Status(env, st), "a fast delivery shows as thinking")

	st.Turn.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Delivered: pipeline.Delivered{PlatformMessageID: "p" + id}})
	p.pass(env, st)
	require.False(t, st.Turn.Running())
}

func TestASimpleTurnsWholeLifeIsOneUpsert(t *testing.T) {
	var p publisher
	st := &State{}
	simpleTurn(t, &p, st, 0, "1")
	require.Len(t, p.upserts, 1, "the run's first publish, with the message's time: %v", p.upserts)
	assert.Equal(t, map[string]any{
		workflows.AttrChannel.GetName():          "web",
		workflows.AttrChat.GetName():             "c",
		attrState:                                "idle",
		workflows.AttrQueueDepth.GetName():       int64(0),
		workflows.AttrPendingProposals.GetName(): int64(0),
		attrInboundAt:                            t0,
	}, p.upserts[0])

	p.upserts = nil
	simpleTurn(t, &p, st, time.Hour, "2")
	require.Len(t, p.upserts, 1, "%v", p.upserts)
	assert.Equal(t, map[string]any{attrInboundAt: t0.Add(time.Hour)}, p.upserts[0],
		"the message's time alone, once its window closed")
}

func TestAToolTurnPublishesThinkingWithTheMessagesTimeThenIdle(t *testing.T) {
	p := publisher{v: VisibilityState{Published: &PublishedAttributes{State: workflows.StatusIdle}}}
	st := &State{}
	env := turnEnv()
	st.Intake.Admit(env, msg("1", "u"))
	ask := only[AskModel](t, st.Turn.Begin(env, startOf(msg("1", "u"))))
	p.pass(env, st)

	call := pipeline.ToolCall{ID: "c1", Name: "search", Arguments: "{}"}
	run := only[RunTool](t, st.Turn.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{ToolCalls: []pipeline.ToolCall{call}, Model: "openai/a"}}))
	p.pass(env, st)

	ask = only[AskModel](t, st.Turn.ToolDone(env, ToolRan{TurnID: run.TurnID, Step: run.Step, Result: pipeline.ToolResult{CallID: "c1", Name: "search", Output: "found"}}))
	p.pass(env, st)
	st.Turn.Answered(env, ModelAnswered{TurnID: ask.TurnID, Step: 1, Model: "openai/a", Result: pipeline.TurnResult{Reply: "hi", Model: "openai/a"}})
	p.pass(env, st)
	st.Turn.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Delivered: pipeline.Delivered{PlatformMessageID: "p1"}})
	p.pass(env, st)

	assert.Equal(t, []map[string]any{
		{attrInboundAt: t0, attrState: "thinking"},
		{attrState: "idle"},
	}, p.upserts, "two upserts: the message's time rides on thinking")
}

// activeAt is a running turn in phase, changed by set.
func activeAt(phase string, set func(a *ActiveTurn)) *State {
	st := &State{}
	st.Turn.Active = &ActiveTurn{TurnID: "t1", Phase: phase, Messages: []pipeline.Inbound{msg("1", "u")}}
	if set != nil {
		set(st.Turn.Active)
	}
	return st
}

func TestStatusAndWhatTheSearchAttributeShows(t *testing.T) {
	gateCall := func(st *State) *State { st.Engagement.GateCalls = []GateCall{{Gen: 1}}; return st }
	tests := []struct {
		name             string
		st               *State
		status, searched workflows.Status
	}{
		{"nothing", &State{}, workflows.StatusIdle, workflows.StatusIdle},
		{"a window open", &State{Intake: IntakeState{Buffers: []Buffer{{Gen: 1}}}}, workflows.StatusDebouncing, workflows.StatusIdle},
		{"a gated batch waits", &State{Engagement: EngagementState{GateBuffer: []pipeline.Inbound{msg("1", "u")}}}, workflows.StatusDebouncing, workflows.StatusIdle},
		{"the gate is asked", gateCall(&State{}), workflows.StatusGating, workflows.StatusIdle},
		{"first model step", activeAt(PhaseModel, nil), workflows.StatusThinking, workflows.StatusIdle},
		{"first step, a turn runs over the gate", gateCall(activeAt(PhaseModel, nil)), workflows.StatusThinking, workflows.StatusIdle},
		{"first answer, fast delivery", activeAt(PhaseDelivering, func(a *ActiveTurn) { a.Step = 1 }), workflows.StatusThinking, workflows.StatusIdle},
		{"tools running", activeAt(PhaseModel, func(a *ActiveTurn) { a.Step, a.Calls = 1, &pipeline.ToolRound{} }), workflows.StatusThinking, workflows.StatusThinking},
		{"second step", activeAt(PhaseModel, func(a *ActiveTurn) { a.Step, a.Rounds = 1, []pipeline.ToolRound{{}} }), workflows.StatusThinking, workflows.StatusThinking},
		{"a fallback", activeAt(PhaseModel, func(a *ActiveTurn) { a.Attempts.Failed = []string{"openai/a: RateLimited"} }), workflows.StatusThinking, workflows.StatusThinking},
		{"a lost worker", activeAt(PhaseModel, func(a *ActiveTurn) { a.Attempts.Losses = 1 }), workflows.StatusThinking, workflows.StatusThinking},
		{"a wait for a model", activeAt(PhaseModel, func(a *ActiveTurn) { a.Waiting = &TryModel{Model: "openai/a"} }), workflows.StatusThinking, workflows.StatusThinking},
		{"fast delivery after tools", activeAt(PhaseDelivering, func(a *ActiveTurn) { a.Step, a.Rounds = 2, []pipeline.ToolRound{{}} }), workflows.StatusThinking, workflows.StatusThinking},
		{"waiting for approvals", activeAt(PhaseWaiting, nil), workflows.StatusWaitingUser, workflows.StatusWaitingUser},
		{"slow first chunk", activeAt(PhaseDelivering, func(a *ActiveTurn) { a.Step, a.Slow = 1, true }), workflows.StatusDelivering, workflows.StatusDelivering},
		{"a second chunk", activeAt(PhaseDelivering, func(a *ActiveTurn) { a.Step, a.Next = 1, 1 }), workflows.StatusDelivering, workflows.StatusDelivering},
		{"parked", activeAt(PhaseParked, nil), workflows.StatusDeliveryFailed, workflows.StatusDeliveryFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.status, Status(envAt(0), tt.st))
			assert.Equal(t, tt.searched, searchableStatus(envAt(0), tt.st))
		})
	}
}

func TestUpdatesCarryOnlyWhatChanged(t *testing.T) {
	v := VisibilityState{}
	st := &State{}
	env := envAt(0)
	require.Len(t, attrs(v.Updates(env, st)), 5, "a run's first publish sets everything but a time it has none of")
	assert.Empty(t, v.Updates(env, st))

	st.Queue.Queue = []Batch{{Messages: []pipeline.Inbound{msg("1", "u")}}}
	st.Proposals.Proposals = []Proposal{{ID: "p1", Status: ProposalPending}, {ID: "p0", Status: ProposalApproved}}
	assert.Equal(t, map[string]any{
		workflows.AttrQueueDepth.GetName():       int64(1),
		workflows.AttrPendingProposals.GetName(): int64(1),
	}, attrs(v.Updates(env, st)))
	assert.Empty(t, v.Updates(env, st))
}

// A session held by a spent budget or a cool-off says so until a step is
// let through again; a session never held upserts nothing for it.
func TestAHoldIsPublishedAndUnsetOnceAStepIsLetThrough(t *testing.T) {
	v := VisibilityState{}
	st := &State{}
	env := envAt(0)
	require.Len(t, v.Updates(env, st), 5)

	until := t0.Add(8 * time.Hour)
	st.Turn.Held = &pipeline.Hold{Reason: "budget:chat", Until: until}
	assert.Equal(t, map[string]any{
		workflows.AttrHeldUntil.GetName():  until,
		workflows.AttrHeldReason.GetName(): "budget:chat",
	}, attrs(v.Updates(env, st)))
	assert.Empty(t, v.Updates(env, st), "the same hold again upserts nothing")

	st.Turn.Held = nil
	unset := v.Updates(env, st)
	require.Len(t, unset, 2, "both attributes are removed")
	assert.Empty(t, attrs(unset), "as unset values")
	assert.Empty(t, v.Updates(env, st))

	// A carried hold is published at the new run's first publish.
	st.Turn.Held = &pipeline.Hold{Reason: "cooloff", Until: until}
	fresh := VisibilityState{}
	assert.Equal(t, "cooloff", attrs(fresh.Updates(env, st))[workflows.AttrHeldReason.GetName()])
}

func TestTheInboundTimeWaitsForTheWindowThenGoesOnce(t *testing.T) {
	v := VisibilityState{Published: &PublishedAttributes{State: workflows.StatusIdle}}
	st := &State{}
	env := envAt(0)
	queue := debounce(2 * time.Second)
	for i, id := range []string{"1", "2"} {
		env.Now = t0.Add(time.Duration(i) * time.Second)
		st.Intake.Admit(env, msg(id, "u"))
		st.Intake.Hold(env, msg(id, "u"), queue)
		assert.Empty(t, v.Updates(env, st), "the window is open")
	}
	st.Intake.Close(env, pipeline.BufferKeyOf(msg("1", "u")), queue)
	assert.Equal(t, map[string]any{attrInboundAt: t0.Add(time.Second)}, attrs(v.Updates(env, st)))
	assert.Empty(t, v.Updates(env, st))

	env.Now = t0.Add(time.Minute)
	st.Intake.Admit(env, msg("3", "u")) // observed: no window, no turn
	assert.Equal(t, map[string]any{attrInboundAt: env.Now}, attrs(v.Updates(env, st)), "a message that waits for nothing has its time published at once")
}

func TestTheInboundTimeRidesOnAnUpsertThereIs(t *testing.T) {
	v := VisibilityState{Published: &PublishedAttributes{State: workflows.StatusIdle, PendingProposals: 1}}
	st := &State{}
	st.Intake.Buffers = []Buffer{{Gen: 1}}
	st.Intake.LastInboundAt = t0
	st.Proposals.Proposals = []Proposal{{ID: "p1", Status: ProposalExpired}}
	assert.Equal(t, map[string]any{workflows.AttrPendingProposals.GetName(): int64(0), attrInboundAt: t0}, attrs(v.Updates(envAt(0), st)),
		"a proposal expired while a window is open: the time goes with that upsert")
}

// populated is a session with something in every part the snapshot shows.
func populated() *State {
	st := activeAt(PhaseModel, func(a *ActiveTurn) {
		a.TurnID, a.Step, a.Stopped = "web:a:c/3", 1, "interrupted"
		a.Steered = []pipeline.Inbound{msg("4", "v")}
	})
	st.Intake = IntakeState{
		Seen:          []SeenMessage{{ID: "1", At: t0}, {ID: "2", At: t0}},
		Buffers:       []Buffer{{Key: pipeline.BufferKey{Thread: "th", Sender: "u"}, Messages: []pipeline.Inbound{msg("5", "u")}, FlushAt: t0.Add(time.Second)}},
		LastInboundAt: t0, Inbound: 7, Duplicates: 1,
	}
	st.Queue = QueueState{
		Queue:    []Batch{{Messages: []pipeline.Inbound{msg("6", "u"), msg("7", "w")}, Queue: debounce(0)}},
		Overflow: &Overflow{Dropped: 2, Summaries: []string{"u: hi"}, Refs: []msgRef{{ID: "8"}}},
		Dropped:  2, Steered: 1, Interrupted: 1, Aborted: 1,
	}
	st.Engagement = EngagementState{
		Participants: []Participant{{ID: "web:u", Name: "U", LastSeen: t0}},
		Observed:     []pipeline.Observed{{Sender: "w", Text: "x", At: t0}},
		LastDenied:   "9", ActivationOverride: pipeline.ActivationGated,
		Counts: EngagementCounts{Denied: 1, Observed: 2, Gated: 3},
	}
	st.Turn.Seq, st.Turn.Resets = 3, 1
	st.Turn.Last = &TurnRecord{TurnID: "web:a:c/3", MessageIDs: []string{"3"}, StartedAt: t0, Outcome: "running", Fallback: []string{"openai/a: RateLimited"}}
	st.Turn.Deliveries = []DeliveryRecord{{TurnID: "web:a:c/2", PlatformMessageID: "p2"}}
	st.Turn.Models = ModelsState{ModelOverride: "x/y", Cooldowns: []Cooldown{{Model: "openai/a", Until: t0.Add(time.Minute), Level: 1}}}
	st.Reactions = ReactionsState{
		Reactions: []Reaction{{MessageID: "3", State: pipeline.ReactionThinking, Shown: true, ClearAt: t0.Add(time.Hour)}},
		Changes:   []pipeline.ReactionChange{{MessageID: "3", State: pipeline.ReactionDone}},
	}
	st.Proposals.Proposals = []Proposal{{ID: "p1", Call: pipeline.ToolCall{ID: "c1", Name: "rm"}, Status: ProposalPending, TurnID: "web:a:c/3"}}
	st.Control = ControlState{Think: pipeline.ThinkLevel("high"), Muted: true, LastHeartbeat: &HeartbeatRecord{TickID: "k1", At: t0, Outcome: HeartbeatAcked}}
	st.Replies.Commands = 4
	st.Counters.Runs = 2
	return st
}

func TestTheSnapshotDecodesAsTheStateQuerysAnswer(t *testing.T) {
	env := turnEnv()
	raw, err := json.Marshal(SnapshotOf(env, populated(), 42))
	require.NoError(t, err)
	var snap workflows.Snapshot
	require.NoError(t, json.Unmarshal(raw, &snap))

	assert.Equal(t, env.Key, snap.Session)
	assert.Equal(t, workflows.StatusThinking, snap.Status)
	assert.Equal(t, env.Settings.Models, snap.Settings.Models)
	assert.Equal(t, pipeline.ActivationGated, snap.Activation)
	assert.Equal(t, "x/y", snap.ModelOverride)
	assert.Equal(t, []workflows.Cooldown{{Model: "openai/a", Until: t0.Add(time.Minute), Level: 1}}, snap.Cooldowns)
	require.Len(t, snap.Proposals, 1)
	assert.Equal(t, "rm", snap.Proposals[0].Call.Name)
	assert.Equal(t, []workflows.Participant{{ID: "web:u", Name: "U", LastSeen: t0}}, snap.Participants)
	assert.Equal(t, 1, snap.ObservedCount)
	assert.Equal(t, "9", snap.LastDenied)
	assert.Equal(t, []workflows.BufferView{{Sender: "u", Thread: "th", MessageIDs: []string{"5"}, FlushAt: t0.Add(time.Second)}}, snap.Buffers)
	assert.Equal(t, []workflows.BatchView{{Mode: pipeline.QueueFollowup, MessageIDs: []string{"6", "7"}, Senders: []string{"u", "w"}}}, snap.Queued)
	assert.Equal(t, &workflows.Overflow{Dropped: 2, Summaries: []string{"u: hi"}, MessageIDs: []string{"8"}}, snap.Overflow)
	assert.Equal(t, &workflows.ActiveView{TurnID: "web:a:c/3", Phase: PhaseModel, Step: 1, MessageIDs: []string{"1"}, Steered: []string{"4"}, Interrupted: true, StartedAt: t0}, snap.Active)
	assert.Equal(t, []workflows.Reaction{{MessageID: "3", State: pipeline.ReactionThinking, Shown: true, ClearAt: t0.Add(time.Hour)}}, snap.Reactions)
	assert.Equal(t, []pipeline.ReactionChange{{MessageID: "3", State: pipeline.ReactionDone}}, snap.Pending)
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, []string{"openai/a: RateLimited"}, snap.LastTurn.Fallback)
	assert.Equal(t, []workflows.DeliveryRecord{{TurnID: "web:a:c/2", PlatformMessageID: "p2"}}, snap.Deliveries)
	assert.Equal(t, workflows.Counters{
		Inbound: 7, Duplicates: 1, Turns: 3, Dropped: 2, Steered: 1, Interrupted: 1, Commands: 4,
		Aborted: 1, Denied: 1, Observed: 2, Gated: 3, Resets: 1, Runs: 2,
	}, snap.Counters)
	assert.Equal(t, 3, snap.TurnSeq)
	assert.Equal(t, 2, snap.SeenMessages)
	assert.Equal(t, t0, snap.LastInboundAt)
	require.NotNil(t, snap.Chat)
	assert.True(t, snap.Chat.Muted)
	assert.Equal(t, pipeline.ThinkLevel("high"), snap.Chat.Think)
	require.NotNil(t, snap.Chat.LastHeartbeat)
	assert.Equal(t, HeartbeatAcked, snap.Chat.LastHeartbeat.Outcome)
	assert.Equal(t, 42, snap.HistoryLength)
}

func TestAnEmptySessionsSnapshotShowsEmptyLists(t *testing.T) {
	raw, err := json.Marshal(SnapshotOf(envAt(0), &State{}, 1))
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &fields))
	assert.JSONEq(t, `[]`, string(fields["buffers"]))
	assert.JSONEq(t, `[]`, string(fields["queued"]))
	assert.NotContains(t, fields, "active")
	assert.NotContains(t, fields, "last_turn")
}

func TestStatusInfoShowsTheLastTurnAndTheChat(t *testing.T) {
	env := turnEnv()
	st := &State{}
	assert.Equal(t, "openai/a", StatusInfo(env, st).Model, "before any turn, the chain's first")
	st.Turn.Models.ModelOverride = "x/y"
	assert.Equal(t, "x/y", StatusInfo(env, st).Model, "the chat's /model")

	st = populated()
	st.Turn.Active = nil
	st.Turn.Last.Model, st.Turn.Last.Outcome, st.Turn.Last.FinishedAt = "anthropic/b", outcomeAnswered, t0.Add(1500*time.Millisecond)
	info := StatusInfo(env, st)
	assert.Equal(t, pipeline.StatusInfo{
		Session: env.Key.WorkflowID(), Model: "anthropic/b", Fallback: "openai/a: RateLimited",
		Queue: env.Settings.Queue, QueueDepth: 1, State: "debouncing", LastTurn: 1500 * time.Millisecond,
		LastOutcome: outcomeAnswered, TurnsTotal: 3, Heartbeat: pipeline.HeartbeatStatus(t0, HeartbeatAcked), Muted: true,
	}, info)
}

func TestDetailsShowTheTurnTheWindowsTheClearsAndTheLastTurn(t *testing.T) {
	st := populated()
	st.Turn.Last.Error = "agent turn failed (RateLimited)"
	got := Details(turnEnv(), st)
	assert.Contains(t, got, "**session:web:a:c** · state `thinking` · queue 1")
	assert.Contains(t, got, "- running turn `web:a:c/3` (model, step 2, 1 message(s))")
	assert.Contains(t, got, "- debounce: 1 message(s) from u in thread th")
	assert.Contains(t, got, "- clear "+pipeline.DefaultEmoji[pipeline.ReactionThinking]+" on 3")
	assert.Contains(t, got, "last turn `web:a:c/3`: running — agent turn failed (RateLimited)")
}
