package session

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// The old run's turn IDs are "<first run ID>.<seq>".
const oldTurnID = "first-run.10"

// quietOld is an old session at a quiet point with something in every
// part: windows open (one from a run without the maximum wait), a queue
// with a summarized overflow, owed clears and retries, a gated batch,
// decided proposals, the chat's settings and every counter.
func quietOld() *workflows.State {
	at := t0.Add
	key := envAt(0).Key
	old := &workflows.State{}
	old.Seen = []workflows.SeenMessage{{ID: "m1", At: at(-time.Minute)}, {ID: strings.Repeat("x", 100), At: at(-time.Minute)}}
	old.Buffers = []workflows.Buffer{
		{Key: pipeline.BufferKey{Thread: "t1", Sender: "u"}, Messages: []pipeline.Inbound{inThread("b1", "t1")}, FirstAt: at(-time.Second), FlushAt: at(time.Second), Gen: 4},
		{Key: pipeline.BufferKey{Thread: "t2", Sender: "v"}, Messages: []pipeline.Inbound{inThread("b2", "t2")}, FlushAt: at(2 * time.Second), Gen: 5},
	}
	old.BufferSeq = 5
	old.QueueOverride = &pipeline.QueuePatch{Mode: ptr(pipeline.QueueCollect), Cap: ptr(5)}
	old.LastInboundAt = at(-time.Second)
	old.Queue = []workflows.Batch{
		{Messages: []pipeline.Inbound{inThread("q1", "t1")}, Queue: pipeline.QueueSettings{Mode: pipeline.QueueCollect, Cap: 5, Drop: pipeline.DropSummarize}, Queued: true,
			Directives: &pipeline.Directives{Think: ptr(pipeline.ThinkHigh)}},
		{Messages: []pipeline.Inbound{inThread("q2", "t3")}, NoAnchor: true},
	}
	old.Overflow = &workflows.Overflow{Dropped: 3, Summaries: []string{"Ann: a", "Ann: b"}, MessageIDs: []string{"o1", "o2", "untracked"}}
	old.AbortedLastRun, old.NewTranscript = true, true
	old.ModelOverride = "anthropic/b"
	old.Cooldowns = []workflows.Cooldown{{Model: "openai/a", Until: at(time.Minute), Level: 2}}
	old.TurnSeq = 9
	old.LastTurn = &workflows.TurnRecord{TurnID: "first-run.9", MessageIDs: []string{"z1"}, Model: "openai/a", Fallback: []string{"anthropic/b: RateLimited"},
		StartedAt: at(-time.Hour), FinishedAt: at(-time.Hour + time.Minute), Outcome: "answered", Steps: 2, Chunks: 1, Delivered: 1,
		Usage: &pipeline.Usage{InputTokens: 10, OutputTokens: 5}, ThinkIgnored: true}
	old.Deliveries = []workflows.DeliveryRecord{{TurnID: "first-run.9", Chunk: 0, PlatformMessageID: "bot-1"}}
	old.Participants = []workflows.Participant{{ID: "web:u", Name: "Ann", LastSeen: at(-time.Minute)}, {ID: "web:peer", Name: "Bee", IsBot: true, LastSeen: at(-time.Hour)}}
	old.Sticky = pipeline.StickyLedger{{Author: "web:u", Expires: at(time.Minute)}}
	old.Observed = []pipeline.Observed{{Sender: "Ann", Text: "hm", At: at(-time.Minute)}}
	old.LoopGuard = pipeline.LoopGuard{SinceHuman: 2, Recent: []time.Time{at(-time.Second)}}
	old.BotThreads = []string{"t1"}
	old.DisengagedTurn = 9 // between turns: no turn that can still reply
	old.ActivationOverride = pipeline.ActivationGated
	old.LastDenied = "d1"
	old.GateBuffer = []pipeline.Inbound{inThread("g1", "t1")}
	old.GateFirstAt, old.GateFlushAt, old.GateSeq = at(-time.Second), at(time.Second), 3
	old.Membership = &pipeline.MembershipCount{Humans: 4, FetchedAt: at(-time.Minute)}
	old.Reactions = []workflows.Reaction{
		{MessageID: "o1", ThreadID: "t1", State: pipeline.ReactionReceived, Shown: true},
		{MessageID: "o2", ThreadID: "t9", State: pipeline.ReactionReceived, Shown: true},
		{MessageID: "z1", ThreadID: "t1", State: pipeline.ReactionDone, Shown: true, ClearAt: at(30 * time.Second)},
		{MessageID: "e1", State: pipeline.ReactionError, Shown: true, RetryAt: at(time.Minute), Attempts: 2},
		{MessageID: "n1", State: pipeline.ReactionNone, Shown: true},
	}
	old.ReactionChanges = []pipeline.ReactionChange{{Session: key, MessageID: "n1", State: pipeline.ReactionNone}}
	old.Proposals = []workflows.Proposal{
		{ID: "p1", Call: toolCall(1), Summary: "amount=1", Requester: "web:u", Origin: "m0", ThreadID: "t1", TurnID: "first-run.8",
			CreatedAt: at(-2 * time.Hour), ExpiresAt: at(22 * time.Hour), Status: ProposalApproved, DecidedBy: boss, MessageID: "bot-p1"},
	}
	old.ProposalSeq = 2
	old.Notices = 6
	old.ControlState = workflows.ControlState{Think: pipeline.ThinkHigh, Verbose: true, UsageMode: pipeline.UsageTokens, Muted: true, ThinkNoteDue: true,
		UsageTotal: pipeline.Usage{InputTokens: 100, OutputTokens: 50}, IdleFrom: at(-time.Minute), PersonActed: true,
		LastHeartbeat:  &workflows.HeartbeatRecord{TickID: "tick-1", ScheduledAt: at(-time.Hour), At: at(-time.Hour), Outcome: HeartbeatAcked, TurnID: "first-run.7"},
		HeartbeatTicks: []string{"tick-0", "tick-1"}}
	old.Status = workflows.StatusIdle
	old.Counters = workflows.Counters{Inbound: 1, Duplicates: 2, Turns: 3, Dropped: 4, Steered: 5, Interrupted: 6, Commands: 7,
		Aborted: 8, Denied: 9, Observed: 10, Gated: 11, Resets: 12, Runs: 13}
	return old
}

func TestFromOldPutsEachPartOfAQuietSessionInItsPlace(t *testing.T) {
	old, at := quietOld(), t0.Add
	want := &State{
		Intake: IntakeState{
			Seen: []SeenMessage{{ID: "m1", At: at(-time.Minute)}, {ID: seenKey(strings.Repeat("x", 100)), At: at(-time.Minute)}},
			Buffers: []Buffer{
				{Key: pipeline.BufferKey{Thread: "t1", Sender: "u"}, Messages: []pipeline.Inbound{inThread("b1", "t1")}, FirstAt: at(-time.Second), FlushAt: at(time.Second), Gen: 4},
				// No maximum wait in its run: it counts from the planned close.
				{Key: pipeline.BufferKey{Thread: "t2", Sender: "v"}, Messages: []pipeline.Inbound{inThread("b2", "t2")}, FirstAt: at(2 * time.Second), FlushAt: at(2 * time.Second), Gen: 5},
			},
			BufferSeq: 5, QueueOverride: old.QueueOverride, LastInboundAt: at(-time.Second), Inbound: 1, Duplicates: 2,
		},
		Engagement: EngagementState{
			Participants: []Participant{{ID: "web:u", Name: "Ann", LastSeen: at(-time.Minute)}, {ID: "web:peer", Name: "Bee", IsBot: true, LastSeen: at(-time.Hour)}},
			Sticky:       old.Sticky, Observed: old.Observed, LoopGuard: old.LoopGuard, BotThreads: []string{"t1"},
			ActivationOverride: pipeline.ActivationGated, LastDenied: "d1", Membership: old.Membership,
			GateBuffer: []pipeline.Inbound{inThread("g1", "t1")}, GateFirstAt: at(-time.Second), GateFlushAt: at(time.Second), GateSeq: 3,
			Counts: EngagementCounts{Denied: 9, Observed: 10, Gated: 11},
		},
		Queue: QueueState{
			Queue: []Batch{
				{Messages: []pipeline.Inbound{inThread("q1", "t1")}, Queue: pipeline.QueueSettings{Mode: pipeline.QueueCollect, Cap: 5, Drop: pipeline.DropSummarize}, Queued: true,
					Directives: &pipeline.Directives{Think: ptr(pipeline.ThinkHigh)}},
				{Messages: []pipeline.Inbound{inThread("q2", "t3")}, NoAnchor: true},
			},
			// Only the tracked overflow messages follow the next turn, in
			// their own thread.
			Overflow:       &Overflow{Dropped: 3, Summaries: []string{"Ann: a", "Ann: b"}, Refs: []msgRef{{ID: "o1", Thread: "t1"}, {ID: "o2", Thread: "t9"}}},
			AbortedLastRun: true, NewTranscript: true, Dropped: 4, Steered: 5, Interrupted: 6, Aborted: 8,
		},
		Turn: TurnState{
			Seq: 9,
			Last: &TurnRecord{TurnID: "first-run.9", MessageIDs: []string{"z1"}, Model: "openai/a", Fallback: []string{"anthropic/b: RateLimited"},
				StartedAt: at(-time.Hour), FinishedAt: at(-time.Hour + time.Minute), Outcome: "answered", Steps: 2, Chunks: 1, Delivered: 1,
				Usage: &pipeline.Usage{InputTokens: 10, OutputTokens: 5}, ThinkIgnored: true},
			Deliveries: []DeliveryRecord{{TurnID: "first-run.9", Chunk: 0, PlatformMessageID: "bot-1"}},
			Models:     ModelsState{ModelOverride: "anthropic/b", Cooldowns: []Cooldown{{Model: "openai/a", Until: at(time.Minute), Level: 2}}},
			Resets:     12,
		},
		Reactions: ReactionsState{
			Reactions: []Reaction{
				{MessageID: "o1", ThreadID: "t1", State: pipeline.ReactionReceived, Shown: true},
				{MessageID: "o2", ThreadID: "t9", State: pipeline.ReactionReceived, Shown: true},
				{MessageID: "z1", ThreadID: "t1", State: pipeline.ReactionDone, Shown: true, ClearAt: at(30 * time.Second)},
				{MessageID: "e1", State: pipeline.ReactionError, Shown: true, RetryAt: at(time.Minute), Attempts: 2},
				{MessageID: "n1", State: pipeline.ReactionNone, Shown: true},
			},
			Changes: []pipeline.ReactionChange{{Session: envAt(0).Key, MessageID: "n1", State: pipeline.ReactionNone}},
		},
		Proposals: ProposalsState{
			// A decided proposal keeps no arguments.
			Proposals: []Proposal{{ID: "p1", Call: pipeline.ToolCall{ID: "c1", Name: "pay", RequiresApproval: true}, Summary: "amount=1", Requester: "web:u", Origin: "m0", ThreadID: "t1",
				TurnID: "first-run.8", CreatedAt: at(-2 * time.Hour), ExpiresAt: at(22 * time.Hour), Status: ProposalApproved, DecidedBy: boss, MessageID: "bot-p1"}},
			Seq: 2,
		},
		Control: ControlState{Think: pipeline.ThinkHigh, Verbose: true, UsageMode: pipeline.UsageTokens, Muted: true, ThinkNoteDue: true,
			UsageTotal: pipeline.Usage{InputTokens: 100, OutputTokens: 50}, IdleFrom: at(-time.Minute), PersonActed: true,
			LastHeartbeat:  &HeartbeatRecord{TickID: "tick-1", ScheduledAt: at(-time.Hour), At: at(-time.Hour), Outcome: HeartbeatAcked, TurnID: "first-run.7"},
			HeartbeatTicks: []string{"tick-0", "tick-1"}},
		Replies:  RepliesState{Notices: 6, Commands: 7},
		Counters: Counters{Inbound: 1, Duplicates: 2, Turns: 3, Dropped: 4, Steered: 5, Interrupted: 6, Commands: 7, Aborted: 8, Denied: 9, Observed: 10, Gated: 11, Resets: 12, Runs: 13},
	}
	assert.Equal(t, want, FromOld(old))
}

func TestFromOldOfNothingIsAFreshSession(t *testing.T) {
	assert.Equal(t, &State{}, FromOld(nil))
	assert.Equal(t, &State{}, FromOld(&workflows.State{}))
}

// refsOld sets an old turn's progress refs, whose type the old package
// does not export, as its carried JSON names them.
func refsOld(t *testing.T, p *workflows.TurnProgress, refs string) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(refs), &p.Refs))
}

// waitingOld is quietOld with a turn that waits for decisions: its step
// called look (no approval), pay c3 (pending as p3) and pay c4 (rejected
// as p4); a message was steered in, and one steered with the backlog.
// It disengaged during the turn.
func waitingOld(t *testing.T) *workflows.State {
	old, at := quietOld(), t0.Add
	round := pipeline.ToolRound{Text: "let me check", Calls: []pipeline.ToolCall{{ID: "c1", Name: "look", Arguments: "{}"}, toolCall(3), toolCall(4)}}
	old.TurnSeq, old.DisengagedTurn = 10, 10
	old.Active = &workflows.ActiveTurn{
		TurnID: oldTurnID, Messages: []pipeline.Inbound{inThread("w1", "t1"), inThread("w2", "t1")}, Phase: workflows.PhaseWaiting,
		Steered: []pipeline.Inbound{inThread("s1", "t1")}, SteeredBacklog: []pipeline.Inbound{inThread("s2", "t1")},
		Step: 2, StartedAt: at(-time.Minute), Options: &workflows.TurnOptions{Think: pipeline.ThinkHigh, Verbose: true, Model: "openai/a"},
		Shown: &pipeline.Shown{Mode: "preview", PreviewID: "bot-prev", Text: ""},
		Progress: &workflows.TurnProgress{Text: "w1\nw2", Anchor: 0, Reset: true,
			Rounds:  []pipeline.ToolRound{{Calls: []pipeline.ToolCall{{ID: "c0", Name: "look"}}, Results: []pipeline.ToolResult{{CallID: "c0", Name: "look", Stored: true}}}},
			Waiting: &workflows.WaitingStep{Round: round, Proposals: []workflows.CallProposal{{CallID: "c3", ProposalID: "p3"}, {CallID: "c4", ProposalID: "p4"}}}},
	}
	refsOld(t, old.Active.Progress, `[{"ID":"w1","Thread":"t1"},{"ID":"w2","Thread":"t1"}]`)
	old.LastTurn = &workflows.TurnRecord{TurnID: oldTurnID, MessageIDs: []string{"w1", "w2"}, Model: "openai/a", Fallback: []string{"anthropic/b: Timeout"},
		StartedAt: at(-time.Minute), Outcome: "running", Steps: 2}
	proposal := func(n int, status, by string) workflows.Proposal {
		return workflows.Proposal{ID: "p" + string(rune('0'+n)), Call: toolCall(n), Requester: "web:u", Origin: "w2", ThreadID: "t1", TurnID: oldTurnID,
			CreatedAt: at(-time.Minute), ExpiresAt: at(time.Hour), Status: status, DecidedBy: by, MessageID: "bot-p" + string(rune('0'+n))}
	}
	p4 := proposal(4, ProposalRejected, boss)
	p4.Reason = "too much"
	old.Proposals = append(old.Proposals, proposal(3, ProposalPending, ""), p4)
	old.ProposalSeq = 4
	return old
}

func TestFromOldCarriesATurnThatWaitsForDecisions(t *testing.T) {
	st := FromOld(waitingOld(t))
	a := st.Turn.Active
	require.NotNil(t, a)
	refused := ProposalDecided{CallID: "c4", Tool: "pay", DecidedBy: boss, Reason: "too much"}
	refusal, _ := refused.Refused()
	assert.Equal(t, &ActiveTurn{
		TurnID: oldTurnID, Messages: []pipeline.Inbound{inThread("w1", "t1"), inThread("w2", "t1")},
		Refs: []msgRef{{ID: "w1", Thread: "t1"}, {ID: "w2", Thread: "t1"}}, Text: "w1\nw2", Phase: PhaseWaiting, Step: 2,
		Options:   TurnOptions{Think: pipeline.ThinkHigh, Verbose: true, Model: "openai/a"},
		Attempts:  StepAttempts{TurnModel: "openai/a", Reset: true, Shown: &pipeline.Shown{Mode: "preview", PreviewID: "bot-prev"}, Failed: []string{"anthropic/b: Timeout"}},
		Rounds:    []pipeline.ToolRound{{Calls: []pipeline.ToolCall{{ID: "c0", Name: "look"}}, Results: []pipeline.ToolResult{{CallID: "c0", Name: "look", Stored: true}}}},
		Calls:     &pipeline.ToolRound{Text: "let me check", Calls: []pipeline.ToolCall{{ID: "c1", Name: "look", Arguments: "{}"}, toolCall(3), toolCall(4)}},
		Decisions: []CallDecision{{CallID: "c3"}, {CallID: "c4", Decided: true, Refused: &refusal}},
		// The backlog message goes to the next step too; it is queued as well.
		Steered: []pipeline.Inbound{inThread("s1", "t1")}, SteeredBacklog: []pipeline.Inbound{inThread("s2", "t1")},
	}, a)
	assert.Equal(t, "too much", st.Proposals.Proposals[2].Reason)
	assert.Equal(t, toolCall(3), st.Proposals.Proposals[1].Call, "a pending proposal keeps its call")
	assert.Empty(t, st.Proposals.Proposals[2].Call.Arguments)
	assert.Equal(t, 4, st.Proposals.Seq)
	assert.Equal(t, oldTurnID, st.Turn.Last.TurnID, "the turn's own record")
	assert.Equal(t, 10, st.Turn.Seq)
	assert.Equal(t, oldTurnID, st.Engagement.DisengagedTurn, "it disengaged during the carried turn: its reply grants no credit")
}

func TestACarriedTurnWithoutItsRecordGetsOne(t *testing.T) {
	old := parkedOld(t)
	old.LastTurn = &workflows.TurnRecord{TurnID: "first-run.9", Outcome: "answered"}
	st := FromOld(old)
	assert.Equal(t, &TurnRecord{TurnID: oldTurnID, MessageIDs: []string{"w1"}, StartedAt: t0.Add(-time.Minute), Outcome: "running"}, st.Turn.Last,
		"as the old run's resumed turn: the record is the running turn's")
	assert.NotEmpty(t, emitted[LastChunkReady](st.Turn.Retry(turnEnv(), RetryAsked{})))
}

func TestACarriedWaitingTurnGoesOnWhenItsLastDecisionComes(t *testing.T) {
	st, env := FromOld(waitingOld(t)), turnEnv()
	env.Settings.Owners = []string{boss}

	resumed := FromOldResume(env, st)
	assert.Equal(t, []pipeline.Edit{{Session: env.Key, PlatformMessageID: "bot-p4", ThreadID: "t1", Text: editsIn(resumed)[0].Text}}, editsIn(resumed),
		"the proposal decided in the old run loses its buttons now")
	assert.Contains(t, editsIn(resumed)[0].Text, "Rejected by web:boss")
	assert.Len(t, resumed, 1, "the turn still waits for p3")

	decided := emitted[ProposalDecided](st.Proposals.Decide(env, pipeline.Decision{ID: "p3", Decision: pipeline.DecisionApprove, By: boss}))
	require.Len(t, decided, 1)
	assert.Equal(t, oldTurnID, decided[0].TurnID)
	run := only[RunTool](t, st.Turn.Decided(env, decided[0].TurnID, decided[0].CallID, nil))
	assert.Equal(t, RunTool{TurnID: oldTurnID, Step: 2, Invocation: pipeline.ToolInvocation{Session: env.Key, TurnID: oldTurnID, Call: pipeline.ToolCall{ID: "c1", Name: "look", Arguments: "{}"}, StoreResult: true}}, run)
	run = only[RunTool](t, st.Turn.ToolDone(env, ToolRan{TurnID: oldTurnID, Step: 2, Result: pipeline.ToolResult{CallID: "c1", Name: "look", Output: "seen"}}))
	assert.Equal(t, "c3", run.Invocation.Call.ID, "the approved call runs next")
	ask := only[AskModel](t, st.Turn.ToolDone(env, ToolRan{TurnID: oldTurnID, Step: 2, Result: pipeline.ToolResult{CallID: "c3", Name: "pay", Output: "paid"}}))
	assert.Equal(t, oldTurnID, ask.TurnID)
	assert.Equal(t, "openai/a", ask.Request.Model, "the turn's own /model directive")
	assert.Contains(t, ask.Request.Rounds[1].Results[2].Output, "rejected this call (web:boss): too much")
	assert.Len(t, ask.Request.Messages, 4, "the steered messages joined the turn")
}

func TestACarriedTurnWhoseDecisionsAllCameGoesOnAtOnce(t *testing.T) {
	old := waitingOld(t)
	old.Proposals[1].Status, old.Proposals[1].DecidedBy = ProposalApproved, boss
	st, env := FromOld(old), turnEnv()

	resumed := FromOldResume(env, st)
	assert.Len(t, editsIn(resumed), 2, "both proposals lose their buttons")
	assert.Equal(t, "c1", only[RunTool](t, resumed).Invocation.Call.ID)
	assert.Equal(t, PhaseModel, st.Turn.Active.Phase)
}

// parkedOld is quietOld with a turn whose second and last chunk could
// not be delivered.
func parkedOld(t *testing.T) *workflows.State {
	old := quietOld()
	old.TurnSeq = 10
	old.Active = &workflows.ActiveTurn{
		TurnID: oldTurnID, Messages: []pipeline.Inbound{inThread("w1", "t1")}, Phase: workflows.PhaseParked, Step: 1,
		Steered: []pipeline.Inbound{inThread("s1", "t1")}, SteeredBacklog: []pipeline.Inbound{inThread("s2", "t1")},
		StartedAt: t0.Add(-time.Minute), SlowDelivery: true,
		Progress: &workflows.TurnProgress{Text: "w1", Chunks: []string{"one", "two"}, Next: 1},
	}
	refsOld(t, old.Active.Progress, `[{"ID":"w1","Thread":"t1"}]`)
	old.LastTurn = &workflows.TurnRecord{TurnID: oldTurnID, MessageIDs: []string{"w1"}, StartedAt: t0.Add(-time.Minute), Outcome: "delivery_failed",
		Error: "delivery of chunk 2/2 failed (Timeout)", Steps: 1, Chunks: 2, Delivered: 1}
	old.Deliveries = append(old.Deliveries, workflows.DeliveryRecord{TurnID: oldTurnID, Chunk: 0, PlatformMessageID: "bot-2"})
	return old
}

func TestACarriedParkedTurnRetriesItsChunkUnderTheSameIdempotencyKey(t *testing.T) {
	st, env := FromOld(parkedOld(t)), turnEnv()
	a := st.Turn.Active
	require.NotNil(t, a)
	assert.Equal(t, PhaseParked, a.Phase)
	assert.Equal(t, []string{"one", "two"}, a.Chunks)
	assert.Equal(t, 1, a.Next)
	assert.True(t, a.Slow)
	assert.Equal(t, []pipeline.Inbound{inThread("s1", "t1")}, a.Steered, "a parked turn takes no backlog message: it has no next step, and they are queued")
	assert.Equal(t, "delivery_failed", st.Turn.Last.Outcome)
	assert.True(t, st.Turn.IsBotMessage("bot-2"))

	last := emitted[LastChunkReady](st.Turn.Retry(env, RetryAsked{By: "operator:eve"}))
	require.Len(t, last, 1)
	assert.Equal(t, env.Key.WorkflowID()+"/"+oldTurnID+"/1", last[0].Deliver.Delivery.IdempotencyKey,
		"the old run's key for the chunk: one that reached the platform is not sent twice")
	assert.Equal(t, "two", last[0].Deliver.Delivery.Text)
	assert.False(t, last[0].Deliver.Fast)
	assert.Equal(t, []msgRef{{ID: "w1", Thread: "t1"}}, last[0].Refs)
}

func TestATurnTheOldRunCouldNotCarryEndsAndItsReactionsAreCleared(t *testing.T) {
	for name, change := range map[string]func(*workflows.ActiveTurn){
		"asking its model": func(a *workflows.ActiveTurn) { a.Phase = workflows.PhaseModel },
		"aborted":          func(a *workflows.ActiveTurn) { a.Aborted = true },
		"asked to retry":   func(a *workflows.ActiveTurn) { a.RetryRequested = true },
		"without progress": func(a *workflows.ActiveTurn) { a.Progress = nil },
	} {
		t.Run(name, func(t *testing.T) {
			old := parkedOld(t)
			old.Reactions = append(old.Reactions, workflows.Reaction{MessageID: "w1", ThreadID: "t1", State: pipeline.ReactionError, Shown: true},
				workflows.Reaction{MessageID: "s1", ThreadID: "t1", State: pipeline.ReactionThinking, Shown: true},
				workflows.Reaction{MessageID: "s2", ThreadID: "t1", State: pipeline.ReactionReceived, Shown: true})
			change(old.Active)
			st := FromOld(old)
			assert.Nil(t, st.Turn.Active)
			assert.Equal(t, oldTurnID, st.Turn.Last.TurnID)
			assert.Equal(t, "failed", st.Turn.Last.Outcome)
			clears := map[string]time.Time{}
			for _, r := range st.Reactions.Reactions {
				clears[r.MessageID] = r.ClearAt
			}
			assert.Equal(t, clearDueAtOnce, clears["w1"])
			assert.Equal(t, clearDueAtOnce, clears["s1"])
			assert.Zero(t, clears["s2"], "a steer-backlog message is queued: its turn clears it")
			env := envAt(0)
			assert.Equal(t, clearDueAtOnce, arms(st.Reactions.Resume(env))[0].At, "the clear timer fires at once")
		})
	}
}

// oldFixture is one of the old package's recorded states, as a running
// session carries it.
func oldFixture(t *testing.T, name string) *workflows.State {
	t.Helper()
	data, err := os.ReadFile("../testdata/state_" + name + ".json")
	require.NoError(t, err)
	var old workflows.State
	require.NoError(t, json.Unmarshal(data, &old))
	return &old
}

func TestFromOldReadsTheOldPackagesRecordedStates(t *testing.T) {
	assert.Equal(t, &State{}, FromOld(oldFixture(t, "empty")))

	st, x := FromOld(oldFixture(t, "full")), time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, []SeenMessage{{ID: "x", At: x}}, st.Intake.Seen)
	require.Len(t, st.Intake.Buffers, 1)
	assert.Equal(t, Buffer{Key: pipeline.BufferKey{Thread: "x", Sender: "x"}, Messages: st.Intake.Buffers[0].Messages, FirstAt: x, FlushAt: x, Gen: 7}, st.Intake.Buffers[0])
	assert.Equal(t, "x", st.Intake.Buffers[0].Messages[0].MessageID)
	assert.Equal(t, 7, st.Intake.BufferSeq)
	assert.Equal(t, 7, *st.Intake.QueueOverride.Cap)
	assert.Equal(t, x, st.Intake.LastInboundAt)

	require.Len(t, st.Queue.Queue, 1)
	assert.True(t, st.Queue.Queue[0].Queued && st.Queue.Queue[0].NoAnchor)
	assert.Equal(t, 7, st.Queue.Queue[0].Queue.Cap)
	assert.Equal(t, &Overflow{Dropped: 7, Summaries: []string{"x"}, Refs: []msgRef{{ID: "x", Thread: "x"}}}, st.Queue.Overflow)
	assert.True(t, st.Queue.AbortedLastRun && st.Queue.NewTranscript)

	assert.Nil(t, st.Turn.Active, `its turn is in phase "x": not one the old run carries`)
	assert.Equal(t, "failed", st.Turn.Last.Outcome)
	assert.Equal(t, 7, st.Turn.Seq)
	assert.Equal(t, []DeliveryRecord{{TurnID: "x", Chunk: 7, PlatformMessageID: "x"}}, st.Turn.Deliveries)
	assert.Equal(t, ModelsState{ModelOverride: "x", Cooldowns: []Cooldown{{Model: "x", Until: x, Level: 7}}}, st.Turn.Models)

	e := st.Engagement
	assert.Equal(t, []Participant{{ID: "x", Name: "x", IsBot: true, LastSeen: x}}, e.Participants)
	assert.Equal(t, pipeline.StickyLedger{{Author: "x", Expires: x}}, e.Sticky)
	assert.Equal(t, []pipeline.Observed{{Sender: "x", Text: "x", At: x}}, e.Observed)
	assert.Equal(t, pipeline.LoopGuard{SinceHuman: 7, Recent: []time.Time{x}, Active: true}, e.LoopGuard)
	assert.Equal(t, []string{"x"}, e.BotThreads)
	assert.Equal(t, "x", e.ActivationOverride)
	assert.Equal(t, "x", e.LastDenied)
	assert.Len(t, e.GateBuffer, 1)
	assert.Equal(t, []time.Time{x, x}, []time.Time{e.GateFirstAt, e.GateFlushAt})
	assert.Equal(t, 7, e.GateSeq)
	assert.Empty(t, e.DisengagedTurn)

	assert.Equal(t, []Reaction{{MessageID: "x", ThreadID: "x", State: "x", Shown: true, ClearAt: clearDueAtOnce, RetryAt: x, Attempts: 7}}, st.Reactions.Reactions,
		"the message of the turn not carried is owed a clear")
	assert.Len(t, st.Reactions.Changes, 1)
	require.Len(t, st.Proposals.Proposals, 1)
	assert.Equal(t, "x", st.Proposals.Proposals[0].MessageID)
	assert.Equal(t, 7, st.Proposals.Seq)
	assert.Equal(t, RepliesState{Notices: 7, Commands: 7}, st.Replies)
	assert.Equal(t, Counters{Inbound: 7, Duplicates: 7, Turns: 7, Dropped: 7, Steered: 7, Interrupted: 7, Commands: 7, Aborted: 7, Denied: 7, Observed: 7, Gated: 7, Resets: 7, Runs: 7}, st.Counters)
	assert.Equal(t, []int{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, []int{st.Intake.Inbound, st.Intake.Duplicates, st.Queue.Dropped, st.Queue.Steered, st.Queue.Interrupted,
		st.Queue.Aborted, e.Counts.Denied, e.Counts.Observed, e.Counts.Gated, st.Turn.Resets, st.Replies.Commands})
}

func TestWhatFromOldMakesSurvivesContinueAsNew(t *testing.T) {
	for name, old := range map[string]*workflows.State{
		"quiet": quietOld(), "waiting": waitingOld(t), "parked": parkedOld(t),
		"full fixture": oldFixture(t, "full"), "empty fixture": oldFixture(t, "empty"),
	} {
		t.Run(name, func(t *testing.T) {
			st := FromOld(old)
			data, err := json.Marshal(st)
			require.NoError(t, err)
			var back State
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, st, &back)
		})
	}
}

func TestFromOldSharesNoSliceWithTheOldState(t *testing.T) {
	old := waitingOld(t)
	st := FromOld(old)
	a, oa := st.Turn.Active, old.Active
	for name, pair := range map[string][2]any{
		"seen":             {&old.Seen[0], &st.Intake.Seen[0]},
		"window messages":  {&old.Buffers[0].Messages[0], &st.Intake.Buffers[0].Messages[0]},
		"queued messages":  {&old.Queue[0].Messages[0], &st.Queue.Queue[0].Messages[0]},
		"summaries":        {&old.Overflow.Summaries[0], &st.Queue.Overflow.Summaries[0]},
		"participants":     {&old.Participants[0], &st.Engagement.Participants[0]},
		"sticky":           {&old.Sticky[0], &st.Engagement.Sticky[0]},
		"observed":         {&old.Observed[0], &st.Engagement.Observed[0]},
		"loop guard":       {&old.LoopGuard.Recent[0], &st.Engagement.LoopGuard.Recent[0]},
		"bot threads":      {&old.BotThreads[0], &st.Engagement.BotThreads[0]},
		"gate buffer":      {&old.GateBuffer[0], &st.Engagement.GateBuffer[0]},
		"reactions":        {&old.Reactions[0], &st.Reactions.Reactions[0]},
		"reaction changes": {&old.ReactionChanges[0], &st.Reactions.Changes[0]},
		"proposals":        {&old.Proposals[0], &st.Proposals.Proposals[0]},
		"heartbeat ticks":  {&old.HeartbeatTicks[0], &st.Control.HeartbeatTicks[0]},
		"deliveries":       {&old.Deliveries[0], &st.Turn.Deliveries[0]},
		"cooldowns":        {&old.Cooldowns[0], &st.Turn.Models.Cooldowns[0]},
		"turn messages":    {&oa.Messages[0], &a.Messages[0]},
		"steered":          {&oa.Steered[0], &a.Steered[0]},
		"rounds":           {&oa.Progress.Rounds[0], &a.Rounds[0]},
		"round calls":      {&oa.Progress.Rounds[0].Calls[0], &a.Rounds[0].Calls[0]},
		"step calls":       {&oa.Progress.Waiting.Round.Calls[0], &a.Calls.Calls[0]},
		"fallback":         {&old.LastTurn.Fallback[0], &a.Attempts.Failed[0]},
	} {
		assert.NotSame(t, pair[0], pair[1], name)
	}
	oldParked := parkedOld(t)
	parked := FromOld(oldParked)
	assert.NotSame(t, &oldParked.Active.Progress.Chunks[0], &parked.Turn.Active.Chunks[0], "chunks")
}

func TestWorkingOnWhatFromOldMadeLeavesTheOldStateAsItWas(t *testing.T) {
	old := waitingOld(t)
	before, err := json.Marshal(old)
	require.NoError(t, err)
	st, env := FromOld(old), turnEnv()

	st.Intake.Admit(env, inThread("new", "t1"))
	st.Intake.Hold(env, pipeline.Inbound{MessageID: "more", SenderID: "u", ThreadID: "t1"}, debounce(time.Second))
	st.Engagement.See(env, inThread("new", "t1"))
	st.Engagement.GrantSticky(env, "other", []pipeline.Inbound{inThread("new", "t1")}, "t7")
	st.Turn.Steer([]pipeline.Inbound{inThread("s3", "t1")}, false)
	st.Reactions.React(env, []msgRef{{ID: "o1"}}, pipeline.ReactionError)
	st.Control.NewTick(env, pipeline.HeartbeatTick{ID: "tick-2"})
	FromOldResume(env, st)
	st.Proposals.Decide(env, pipeline.Decision{ID: "p3", Decision: pipeline.DecisionApprove, By: "operator:eve"})
	st.Turn.Decided(env, oldTurnID, "c3", nil)
	st.Turn.ToolDone(env, ToolRan{TurnID: oldTurnID, Step: 2, Result: pipeline.ToolResult{CallID: "c1"}})

	after, err := json.Marshal(old)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after))
}
