package retiring

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// keptDecided is a session that has decided as many proposals as it
// keeps, so closing the next one prunes the oldest.
func keptDecided() *State {
	st := &State{Status: StatusIdle}
	for i := 1; i <= keptProposals; i++ {
		st.Proposals = append(st.Proposals, Proposal{
			ID: fmt.Sprintf("p%d", i), Call: pipeline.ToolCall{ID: fmt.Sprintf("old%d", i), Name: "old"},
			Status: ProposalApproved, DecidedBy: "webchat:boss", TurnID: "old",
		})
	}
	st.ProposalSeq = keptProposals
	return st
}

var email = pipeline.ToolCall{ID: "c2", Name: "email", Arguments: `{"to":"ceo"}`, RequiresApproval: true}

// Every decision reaches its own call, however many decided proposals the
// session keeps: closing one prunes the oldest, which must not shift the
// outcome read for the next.
func TestADecisionReachesItsOwnCallWhenTheOldestArePruned(t *testing.T) {
	first, second := fmt.Sprintf("p%d", keptProposals+1), fmt.Sprintf("p%d", keptProposals+2)
	for _, tc := range []struct {
		name              string
		payDecision       string
		emailDecision     string
		ran               []pipeline.ToolCall
		payErr, emailErrs bool
	}{
		{"reject the first, approve the second", pipeline.DecisionReject, pipeline.DecisionApprove, []pipeline.ToolCall{email}, true, false},
		{"approve the first, reject the second", pipeline.DecisionApprove, pipeline.DecisionReject, []pipeline.ToolCall{pay}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay, email}))
			signalAt(env, time.Second, inbound("m1", "pay and email"))
			decideAt(env, time.Minute, pipeline.Decision{ID: first, Decision: tc.payDecision, By: "webchat:boss"})
			decideAt(env, 2*time.Minute, pipeline.Decision{ID: second, Decision: tc.emailDecision, By: "webchat:boss"})
			snap := queryStateAt(t, env, 3*time.Minute)
			run(t, env, keptDecided())

			assert.Equal(t, tc.ran, p.tools, "only the approved call runs")
			require.Len(t, p.steps, 2)
			results := p.steps[1].Req.Rounds[0].Results
			require.Len(t, results, 2, "one result per call")
			assert.Equal(t, []string{"c1", "c2"}, []string{results[0].CallID, results[1].CallID}, "each result is its own call's")
			assert.Equal(t, tc.payErr, results[0].IsError)
			assert.Equal(t, tc.emailErrs, results[1].IsError)
			assert.Len(t, snap.Proposals, keptProposals, "the decided ones kept are bounded")
			for _, kept := range snap.Proposals {
				assert.Empty(t, kept.Call.Arguments, "%s: a decided proposal keeps no tool arguments", kept.ID)
			}
		})
	}
}

// stopSteer is a steer-mode session whose first turn takes 10 s and calls
// a tool once, so a message steered into it waits for the next step.
func TestStopDropsWhatWasSteeredIntoTheStoppedTurn(t *testing.T) {
	env, p := newEnv(t, withQueue(pipeline.QueueSteer), withSlowModel(10*time.Second), continueOnce)
	signalAt(env, time.Second, inbound("m1", "first"))
	signalAt(env, 3*time.Second, inbound("m2", "steered in"))
	signalAt(env, 5*time.Second, inbound("s1", "/stop"))
	signalAt(env, 6*time.Second, inbound("m3", "after the stop"))
	run(t, env, nil)

	assert.Equal(t, []string{"first", pipeline.AbortedNotice + "\n\nafter the stop"}, p.turnTexts(),
		"the steered message is dropped with the stopped turn; what came after the stop has a turn of its own")
	assert.Contains(t, p.replies(), pipeline.AbortedReply)
	at, ok := p.clearedAt("m2")
	require.True(t, ok, "the dropped message's reaction is cleared")
	assert.Equal(t, 5*time.Second, at, "at the stop")
}

// A chat that never goes quiet (a message every 2 s, turns of 5 s)
// continues as new within a turn of the suggestion, carrying its queue.
func TestABusyChatContinuesAsNewBetweenTurns(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second))
	suggested := time.Minute
	continuesAsNewBetweenTurns(t, env, p, 300, suggested)
	assert.Less(t, p.elapsed(), 2*suggested, "long before the chatter stops")
}

// continuesAsNewBetweenTurns sends messages, one every 2 s, suggests
// continue-as-new at suggested, and checks that the run continued as new
// between turns, carrying its queue, after at most the turn running at
// the suggestion.
func continuesAsNewBetweenTurns(t *testing.T, env *testsuite.TestWorkflowEnvironment, p *fakePlatform, messages int, suggested time.Duration) {
	t.Helper()
	for i := 0; i < messages; i++ {
		signalAt(env, time.Duration(1+2*i)*time.Second, inbound(fmt.Sprintf("m%d", i), fmt.Sprintf("message %d", i)))
	}
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, suggested)
	stepsAtSuggestion := 0
	env.RegisterDelayedCallback(func() { stepsAtSuggestion = len(p.steps) }, suggested)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})
	carried := continuedState(t, env)

	assert.LessOrEqual(t, len(p.steps), stepsAtSuggestion+1, "at most the turn running at the suggestion finishes first")
	assert.NotEmpty(t, carried.Queue, "the queue is carried")
	assert.Nil(t, carried.Active, "between turns")
}

// A turn that waits for a decision is carried by continue-as-new and goes
// on in the next run: the decision there runs the tool once, and the
// answer follows.
func TestATurnWaitingForADecisionIsCarriedAndResumes(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Minute)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})
	carried := continuedState(t, env)
	require.NotNil(t, carried.Active, "the waiting turn is carried")
	assert.Equal(t, PhaseWaiting, carried.Active.Phase)
	require.Len(t, p.sent, 1, "the proposal message")
	assert.Empty(t, p.tools)

	next, p2 := newEnvAt(t, testStart.Add(time.Minute), toolScript([]pipeline.ToolCall{pay}))
	decideAt(next, time.Hour, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "webchat:boss"})
	run(t, next, carried)
	assert.Equal(t, []pipeline.ToolCall{pay}, p2.tools, "approved in the next run: the tool ran, once")
	require.Len(t, p2.steps, 1, "the turn's next step, not the first again")
	assert.Equal(t, 1, p2.steps[0].Req.Step)
	assert.Equal(t, carried.Active.TurnID, p2.steps[0].Req.TurnID, "the same turn")
	assert.Equal(t, []string{"final answer"}, p2.replies(), "nothing is proposed twice; the answer follows")
	require.Len(t, p2.edits, 1, "the proposal message shows the outcome")
	states := p2.statesOf("m1")
	require.NotEmpty(t, states)
	assert.Equal(t, pipeline.ReactionNone, states[len(states)-1], "the message's reaction is cleared in the end")
}

// A parked turn is carried by continue-as-new, and the retry in the next
// run delivers what was not delivered, with the same idempotency key.
func TestAParkedTurnIsCarriedAndResumes(t *testing.T) {
	down := true
	refuseWhileDown := func(p *fakePlatform) {
		p.refuse = func(d pipeline.Delivery) error {
			if down {
				return temporal.NewNonRetryableApplicationError("chat not found", "PlatformRejected", nil)
			}
			return nil
		}
	}
	env, p := newEnv(t, refuseWhileDown)
	signalAt(env, time.Second, inbound("m1", "hi"))
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Minute)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})
	carried := continuedState(t, env)
	require.NotNil(t, carried.Active, "the parked turn is carried")
	assert.Equal(t, PhaseParked, carried.Active.Phase)
	assert.Empty(t, p.sent)

	down = false
	next, p2 := newEnvAt(t, testStart.Add(time.Minute), refuseWhileDown)
	next.RegisterDelayedCallback(func() { next.SignalWorkflow(SignalRetry, RetryRequest{By: "operator:test"}) }, time.Hour)
	run(t, next, carried)
	require.Len(t, p2.sent, 1, "delivered once, after the retry")
	assert.Equal(t, "echo hi", p2.sent[0].Text)
	assert.Equal(t, demoSession.WorkflowID()+"/"+carried.Active.TurnID+"/0", p2.sent[0].IdempotencyKey, "the chunk's own key")
	assert.Empty(t, p2.steps, "the model is not asked again")
}

// A gated chat's batch that reaches its bound leaves State for the gate's
// coroutine; from that moment, before the coroutine first runs, the
// session must count as busy, so that no continue-as-new decided in the
// same task (the main loop checks right after taking the messages)
// carries State without it.
func TestAGatedBatchAtItsBoundCountsAsBusyAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    versions
		held bool
	}{
		{"today", versions{hardened: true, slack: true, security: true, control: true, cost: true, stream: true, promises: true}, true},
		{"runs from before the change", versions{hardened: true, slack: true, security: true, control: true, cost: true, stream: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (bool, error) {
				re := &runEnv{ctx: ctx, key: demoSession, log: workflow.GetLogger(ctx), settings: testSettings(), v: tc.v, counters: &Counters{}}
				re.settings.Activation, re.settings.GateModel = pipeline.ActivationGated, "openai/gate"
				e := &engagement{runEnv: re, st: &EngagementState{},
					turnRunning: func() bool { return false }, turnSeq: func() int { return 0 },
					isBotMessage: func(string) bool { return false }, forward: func([]pipeline.Inbound) {}}
				for i := 0; i < maxBufferedMessages; i++ {
					e.gateMessage(groupMessage(fmt.Sprintf("g%d", i), "alice", "chatter"), workflow.Now(ctx))
				}
				// No yield since the last message: what the main loop
				// would see before deciding to continue as new.
				return e.gatePending() || e.busy(), nil
			}, workflow.RegisterOptions{Name: "gate-bound"})
			env.RegisterActivityWithOptions(func(context.Context, pipeline.GateRequest) (pipeline.GateResult, error) {
				return pipeline.GateResult{}, nil
			}, activity.RegisterOptions{Name: pipeline.ActivityGate})
			env.ExecuteWorkflow("gate-bound")
			require.NoError(t, env.GetWorkflowError())
			var held bool
			require.NoError(t, env.GetWorkflowResult(&held))
			assert.Equal(t, tc.held, held, "the batch is in State or the session is busy")
		})
	}
}

// The reload signal reads the settings again: a sender removed from the
// allow list is refused at their next message in an open chat, and a new
// model chain is used by the next turn.
func TestReloadAppliesChangedSettingsToAnOpenSession(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) { p.settings.AllowFrom = []string{"*"} })
	bob := func(id, text string) pipeline.Inbound {
		in := inbound(id, text)
		in.SenderID = "bob"
		return in
	}
	signalAt(env, time.Second, bob("b1", "hello"))
	signalAt(env, time.Second, inbound("a1", "hi from alice"))
	env.RegisterDelayedCallback(func() {
		p.mu.Lock()
		p.settings.AllowFrom = []string{"webchat:alice"}
		p.settings.Models = []string{"openai/new"}
		p.mu.Unlock()
		env.SignalWorkflow(SignalReload, ReloadRequest{By: "test", Reason: "configuration changed"})
	}, time.Minute)
	signalAt(env, time.Minute+time.Second, bob("b2", "still there?"))
	signalAt(env, time.Minute+2*time.Second, inbound("a2", "and now?"))
	run(t, env, nil)

	require.Len(t, p.steps, 3, "bob before, alice before and after; not bob after")
	for _, s := range p.steps {
		assert.NotEqual(t, "still there?", s.Req.Text, "bob is no longer allowed")
	}
	assert.Equal(t, "demo/echo", p.steps[0].Req.Model)
	assert.Equal(t, "openai/new", p.steps[2].Req.Model, "the new chain from the next turn on")
}

// A model attempt cut short because its worker stops is no failure of the
// model: the same model is asked again, with no fallback or cooldown.
func TestAStoppingWorkerIsNotTheModelsFault(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.Models = []string{"openai/first", "anthropic/second"}
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			if len(p.steps) == 1 {
				return pipeline.TurnResult{}, temporal.NewNonRetryableApplicationError("the worker is stopping", pipeline.ErrWorkerStopped, nil)
			}
			return pipeline.TurnResult{Reply: "the answer", Model: req.Model}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, time.Minute)
	run(t, env, nil)

	require.Len(t, p.steps, 2)
	assert.Equal(t, "openai/first", p.steps[1].Req.Model, "the same model again")
	assert.Equal(t, []string{"the answer"}, p.replies())
	require.NotNil(t, snap.LastTurn)
	assert.Empty(t, snap.LastTurn.Fallback, "no fallback")
	assert.Empty(t, snap.Cooldowns, "no cooldown")
}

// Tool results gone from the store fail every model alike: the turn ends
// with a plain reply instead of going through the chain.
func TestMissingToolResultsEndTheTurnWithoutFallback(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.Models = []string{"openai/first", "anthropic/second"}
		p.agent = func(pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{}, temporal.NewNonRetryableApplicationError("tool result c1 of turn t1 is gone", pipeline.ErrToolResultsMissing, nil)
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	require.Len(t, p.steps, 1, "no other model is asked")
	assert.Equal(t, []string{pipeline.ReplyToolResultsMissing}, p.replies())
	assert.Contains(t, p.statesOf("m1"), pipeline.ReactionError)
}

// A run that began under an older release continues as new at its first
// quiet point on today's code, carrying what it holds, so it takes today's
// behaviour there.
func TestARunOfAnOlderReleaseMovesOnAtItsNextQuietPoint(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second))
	runsFromBeforeAndMovesOn(env, changePromises)
	st := &State{Status: StatusIdle, TurnState: TurnState{TurnSeq: 7, ModelOverride: "openai/chosen"},
		IntakeState: IntakeState{Buffers: []Buffer{{Key: pipeline.BufferKeyOf(inbound("m1", "hi")), Messages: []pipeline.Inbound{inbound("m1", "hi")},
			FlushAt: testStart.Add(time.Minute), FirstAt: testStart, Gen: 1}}}}
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession, State: st})
	carried := continuedState(t, env)

	assert.Equal(t, 7, carried.TurnSeq)
	assert.Equal(t, "openai/chosen", carried.ModelOverride, "settings are carried")
	assert.Empty(t, p.steps, "the next run answers")
	require.Len(t, carried.Buffers, 1, "the open window is carried to it")
	assert.Equal(t, time.Duration(0), p.elapsed(), "at once: the run starts at a quiet point")
}

// A parked turn whose progress is past what continue-as-new may carry
// holds the run instead, as before turns could be carried: the state
// must fit one payload.
func TestAParkedTurnTooLargeToCarryHoldsTheRun(t *testing.T) {
	down := true
	env, p := newEnv(t, func(p *fakePlatform) {
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{Reply: strings.Repeat("word ", maxCarriedTurnBytes/4), Model: req.Model}, nil
		}
		p.refuse = func(pipeline.Delivery) error {
			if down {
				return temporal.NewNonRetryableApplicationError("chat not found", "PlatformRejected", nil)
			}
			return nil
		}
	})
	// The reply is chunked in one workflow step, hundreds of milliseconds
	// of CPU under the race detector. The deadlock detector measures wall
	// time, a second by default, which such a step outlasts on a busy
	// machine though nothing blocks; here it only has to catch a hang.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	signalAt(env, time.Second, inbound("m1", "write a lot"))
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Minute)
	snap := queryStateAt(t, env, time.Hour)
	env.RegisterDelayedCallback(func() {
		down = false
		env.SignalWorkflow(SignalRetry, RetryRequest{By: "operator:test"})
	}, 2*time.Hour)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})
	carried := continuedState(t, env)

	assert.Equal(t, StatusDeliveryFailed, snap.Status, "still parked in the first run an hour after the suggestion")
	assert.Nil(t, carried.Active, "the run continued as new once the turn was done")
	assert.GreaterOrEqual(t, len(p.sentDeliveries()), 2, "the long reply went out in chunks after the retry")
}

// A run that should continue as new starts no other turn while the last
// turn's reply is still being delivered: the next run starts it.
func TestNoTurnStartsWhileARunWaitsToContinueAsNew(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second))
	env.OnActivity(pipeline.ActivityDeliver, mock.Anything, mock.Anything).After(3 * time.Second).Return(p.deliver)
	continuesAsNewBetweenTurns(t, env, p, 100, 30*time.Second)
}
