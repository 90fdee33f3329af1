package retiring

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/pipeline"
)

var pay = pipeline.ToolCall{ID: "c1", Name: "pay", Arguments: `{"amount":100,"to":"bob"}`, RequiresApproval: true}

func decideAt(env *testsuite.TestWorkflowEnvironment, at time.Duration, d pipeline.Decision) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalProposal, d) }, at)
}

func press(id, action, sender string) pipeline.Inbound {
	in := inbound(id, "")
	in.Action, in.SenderID, in.ReplyTo, in.ReplyToken = action, sender, "bot-1", "token-"+id
	return in
}

func TestApprovedProposalRunsTheToolAndTheTurnGoesOn(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	waiting := queryStateAt(t, env, time.Minute)
	signalAt(env, time.Hour, press("b1", "approve:p1", "boss"))
	signalAt(env, time.Hour+time.Second, press("b2", "approve:p1", "boss")) // a double click
	run(t, env, nil)

	assert.Equal(t, StatusWaitingUser, waiting.Status)
	require.Len(t, waiting.Proposals, 1)
	assert.Equal(t, ProposalPending, waiting.Proposals[0].Status)
	assert.Equal(t, "webchat:alice", waiting.Proposals[0].Requester)
	assert.Equal(t, "amount=100, to=bob", waiting.Proposals[0].Summary)

	require.Len(t, p.sent, 2)
	assert.Contains(t, p.sent[0].Text, "🔐 Approval needed [p1]: pay (amount=100, to=bob)")
	assert.Equal(t, []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}, p.sent[0].Buttons)
	assert.Equal(t, "m1", p.sent[0].ReplyTo)
	assert.Equal(t, []pipeline.ToolCall{pay}, p.tools, "approved: the tool ran, once")
	assert.Equal(t, "final answer", p.sent[1].Text, "the turn went on")
	require.Len(t, p.edits, 1)
	assert.Equal(t, pipeline.Edit{Session: demoSession, PlatformMessageID: "bot-1", Text: "✅ Approved by webchat:boss [p1]: pay (amount=100, to=bob)"}, p.edits[0],
		"the proposal message shows the outcome, without buttons")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionWaitingUser, pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"),
		"⏳ while waiting (✍️ is the model step's), ✅, then cleared")
	assert.Len(t, p.replies(), 2, "a double click is one decision, and tells nobody anything")
}

// On Discord a thread is a channel of its own: the edit of a decided
// proposal says the thread it was sent in.
func TestProposalInAThreadIsEditedInItsThread(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	asked := inbound("m1", "pay bob 100")
	asked.ThreadID = "thread-7"
	signalAt(env, time.Second, asked)
	pressed := press("b1", "approve:p1", "boss")
	pressed.ThreadID = "thread-7"
	signalAt(env, time.Hour, pressed)
	run(t, env, nil)

	require.Len(t, p.edits, 1)
	assert.Equal(t, "thread-7", p.edits[0].ThreadID)
	assert.Equal(t, "thread-7", p.sent[0].ThreadID, "the proposal itself went in the thread")
}

func TestRequesterRejectsByCommandWhenAllowed(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}), func(p *fakePlatform) { p.settings.RequesterMayDecide = true })
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	signalAt(env, time.Minute, inbound("c1", "/reject p1 not this month"))
	run(t, env, nil)

	assert.Empty(t, p.tools, "rejected: never run")
	require.Len(t, p.steps, 2)
	result := p.steps[1].Req.Rounds[0].Results[0]
	assert.True(t, result.IsError)
	assert.Contains(t, result.Output, "rejected this call (webchat:alice): not this month", "the model is told, with the reason")
	assert.Contains(t, p.replies(), "Proposal p1 rejected by webchat:alice.")
	require.Len(t, p.edits, 1)
	assert.Equal(t, "🚫 Rejected by webchat:alice [p1]: pay (amount=100, to=bob)\nReason: not this month", p.edits[0].Text)
}

func TestExpiredProposalIsRejected(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	run(t, env, nil)

	assert.Empty(t, p.tools)
	require.Len(t, p.steps, 2)
	assert.Equal(t, time.Second+24*time.Hour, p.steps[1].At, "expired after 24 h, on a durable timer")
	assert.Contains(t, p.steps[1].Req.Rounds[0].Results[0].Output, "expired")
	require.Len(t, p.edits, 1)
	assert.Contains(t, p.edits[0].Text, "⌛ Expired")
}

func TestRefusedDeciderIsToldAndNothingChanges(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	signalAt(env, time.Minute, press("b1", "approve:p1", "mallory"))
	after := queryStateAt(t, env, 2*time.Minute)
	decideAt(env, time.Hour, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "operator:carol"})
	run(t, env, nil)

	assert.Equal(t, ProposalPending, after.Proposals[0].Status, "mallory's press changed nothing")
	var refusal pipeline.Delivery
	for _, d := range p.sentDeliveries() {
		if d.Text != "final answer" && !strings.HasPrefix(d.Text, "🔐") {
			refusal = d
		}
	}
	assert.Contains(t, refusal.Text, "webchat:mallory is not allowed to decide proposal p1")
	assert.Equal(t, "mallory", refusal.PrivateTo, "told to the presser alone")
	assert.Equal(t, "token-b1", refusal.PrivateVia, "through the press's own reply token")
	assert.Equal(t, "bot-1", refusal.ReplyTo, "under the proposal message")
	assert.Len(t, p.tools, 1, "the operator's approval went through")
}

func TestTwoProposalsPendingAtOnce(t *testing.T) {
	second := pipeline.ToolCall{ID: "c2", Name: "email", Arguments: `{"to":"ceo"}`, RequiresApproval: true}
	free := pipeline.ToolCall{ID: "c3", Name: "lookup", Arguments: `{}`}
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay, free, second}))
	signalAt(env, time.Second, inbound("m1", "pay and email"))
	both := queryStateAt(t, env, time.Minute)
	decideAt(env, 2*time.Minute, pipeline.Decision{ID: "p2", Decision: pipeline.DecisionReject, By: "webchat:boss", Reason: "no"})
	decideAt(env, 3*time.Minute, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "webchat:boss"})
	run(t, env, nil)

	require.Len(t, both.Proposals, 2)
	assert.Equal(t, []pipeline.ToolCall{pay, free}, p.tools, "approved and free calls run in the model's order; the rejected one does not")
	results := p.steps[1].Req.Rounds[0].Results
	require.Len(t, results, 3)
	assert.Equal(t, []string{"c1", "c3", "c2"}, []string{results[0].CallID, results[1].CallID, results[2].CallID})
	assert.True(t, results[2].IsError)
	assert.Equal(t, 3*time.Minute, p.steps[1].At, "the turn waited for both")
}

func TestDecideUpdateRefusesAtOnce(t *testing.T) {
	env, _ := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	var refusals []string
	var accepted string
	update := func(at time.Duration, d pipeline.Decision) {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(UpdateDecide, d.ID+d.By+d.Decision, &testsuite.TestUpdateCallback{
				OnReject:   func(err error) { refusals = append(refusals, err.Error()) },
				OnAccept:   func() {},
				OnComplete: func(v any, err error) { accepted, _ = v.(string) },
			}, d)
		}, at)
	}
	update(time.Minute, pipeline.Decision{ID: "p9", Decision: "approve", By: "operator:x"})
	update(2*time.Minute, pipeline.Decision{ID: "p1", Decision: "approve", By: "webchat:alice"})
	update(3*time.Minute, pipeline.Decision{ID: "p1", Decision: "reject", By: "operator:x", Reason: "nope"})
	update(4*time.Minute, pipeline.Decision{ID: "p1", Decision: "approve", By: "operator:y"})
	run(t, env, nil)

	require.Len(t, refusals, 3)
	assert.Contains(t, refusals[0], `unknown proposal "p9"`)
	assert.Contains(t, refusals[1], "webchat:alice is not allowed")
	assert.Contains(t, refusals[2], "already rejected by operator:x")
	assert.Equal(t, "Proposal p1 rejected by operator:x.", accepted)
}

// A late double click can reach a run that has just continued as new: the
// update arrives with the run's first task, while the settings load.
func TestDecisionUpdateInTheFirstTaskOfANewRunIsAnswered(t *testing.T) {
	env, _ := newEnv(t)
	carried := &State{Status: StatusIdle, ProposalsState: ProposalsState{ProposalSeq: 1, Proposals: []Proposal{{
		ID: "p1", Call: pay, Requester: "webchat:alice", Status: ProposalApproved, DecidedBy: "webchat:boss",
		CreatedAt: testStart, ExpiresAt: testStart.Add(time.Hour),
	}}}}
	var answer string
	var refused error
	answered := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateDecide, "late-click", &testsuite.TestUpdateCallback{
			OnAccept:   func() {},
			OnReject:   func(err error) { refused, answered = err, true },
			OnComplete: func(v any, err error) { answer, _ = v.(string); refused, answered = err, true },
		}, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "webchat:boss"})
	}, 0)
	run(t, env, carried)

	require.True(t, answered, "the update was neither accepted nor rejected")
	require.NoError(t, refused)
	assert.Equal(t, "Proposal p1 approved by webchat:boss.", answer, "a repeat of the decision made is one decision")
}

// Before the settings load, the validator cannot know the owners: the
// handler checks them once they are there, so nobody slips through.
func TestDecisionUpdateInTheFirstTaskStillChecksWhoDecides(t *testing.T) {
	env, _ := newEnv(t)
	carried := &State{Status: StatusIdle, ProposalsState: ProposalsState{ProposalSeq: 1, Proposals: []Proposal{{
		ID: "p1", Call: pay, Requester: "webchat:alice", Status: ProposalPending,
		CreatedAt: testStart, ExpiresAt: testStart.Add(time.Hour),
	}}}}
	var refused error
	answered := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateDecide, "stranger", &testsuite.TestUpdateCallback{
			OnAccept:   func() {},
			OnReject:   func(err error) { refused, answered = err, true },
			OnComplete: func(_ any, err error) { refused, answered = err, true },
		}, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "webchat:mallory"})
	}, 0)
	snap := queryStateAt(t, env, time.Minute)
	run(t, env, carried)

	require.True(t, answered)
	require.ErrorContains(t, refused, "webchat:mallory is not allowed to decide proposal p1")
	require.Len(t, snap.Proposals, 1)
	assert.Equal(t, ProposalPending, snap.Proposals[0].Status)
}
