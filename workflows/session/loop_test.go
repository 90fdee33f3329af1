package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// The loop's tests run the whole session on the SDK's test environment,
// against a fake platform and model: what the parts' tables cannot show,
// how the runner and the loop put them together.

var loopSession = pipeline.SessionKey{Channel: "web", Chat: "c1"}

type fakeWorld struct {
	mu        sync.Mutex
	settings  pipeline.Settings
	steps     []pipeline.TurnRequest
	delivered []pipeline.Delivery
	reactions []pipeline.ReactionChange
	toolCalls []pipeline.ToolCall
	agent     func(pipeline.TurnRequest) pipeline.TurnResult
	// tool, when set, answers the tool calls (each attempt).
	tool func(pipeline.ToolInvocation) (pipeline.ToolResult, error)
}

func loopSettings() pipeline.Settings {
	return pipeline.Settings{
		Models:             []string{"demo/echo"},
		ReactionClearDelay: pipeline.Duration(time.Minute), ErrorClearDelay: pipeline.Duration(10 * time.Minute),
		IdleTTL: pipeline.Duration(24 * time.Hour), ChunkLimit: 4000,
		TurnTimeout: pipeline.Duration(time.Minute), TurnHeartbeatTimeout: pipeline.Duration(20 * time.Second), TurnAttempts: 2,
		MaxSteps: 4, Owners: []string{"web:boss"}, ProposalTTL: pipeline.Duration(24 * time.Hour),
		DeliveryTimeout: pipeline.Duration(10 * time.Second), DeliveryDeadline: pipeline.Duration(10 * time.Minute),
		Queue: pipeline.QueueSettings{Mode: pipeline.QueueFollowup, Debounce: 0, Cap: 20, Drop: pipeline.DropSummarize},
	}
}

func newLoopEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakeWorld) {
	suite := &testsuite.WorkflowTestSuite{}
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	w := &fakeWorld{settings: loopSettings()}
	env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) (pipeline.Settings, error) {
		return w.settings, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityLoadSettings})
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.steps = append(w.steps, req)
		if w.agent != nil {
			return w.agent(req), nil
		}
		return pipeline.TurnResult{Reply: "You said: " + req.Text, Model: req.Model}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityAgentTurn})
	env.RegisterActivityWithOptions(func(_ context.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		var rest []string
		if d.Whole {
			chunks := pipeline.Chunk(d.Text, w.settings.ChunkLimit)
			d.Text, d.Whole, d.Total, rest = chunks[0], false, len(chunks), chunks[1:]
		}
		w.delivered = append(w.delivered, d)
		return pipeline.Delivered{PlatformMessageID: "p" + d.IdempotencyKey, Rest: rest}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityDeliver})
	env.RegisterActivityWithOptions(func(_ context.Context, c pipeline.ReactionChange) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.reactions = append(w.reactions, c)
		return nil
	}, activity.RegisterOptions{Name: pipeline.ActivitySetReaction})
	env.RegisterActivityWithOptions(func(_ context.Context, inv pipeline.ToolInvocation) (pipeline.ToolResult, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.toolCalls = append(w.toolCalls, inv.Call)
		if w.tool != nil {
			return w.tool(inv)
		}
		return pipeline.ToolResult{CallID: inv.Call.ID, Name: inv.Call.Name, Output: "done"}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRunTool})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey, pipeline.SessionSettings) error { return nil },
		activity.RegisterOptions{Name: pipeline.ActivitySaveSession})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.Edit) error { return nil },
		activity.RegisterOptions{Name: pipeline.ActivityEdit})
	return env, w
}

func inbound(id, sender, text string) pipeline.Inbound {
	return pipeline.Inbound{Channel: "web", ChatID: "c1", MessageID: id, SenderID: sender, Text: text, ChatType: pipeline.ChatDirect}
}

func (w *fakeWorld) texts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, d := range w.delivered {
		out = append(out, d.Text)
	}
	return out
}

// signalAt sends the session a signal at that point of simulated time.
func signalAt(env *testsuite.TestWorkflowEnvironment, at time.Duration, name string, arg any) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(name, arg) }, at)
}

// runFor runs the session until the idle TTL completes it.
func runFor(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	env.ExecuteWorkflow(WorkflowName, Params{Session: loopSession})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

func TestAMessageIsAnsweredOnceAndItsReactionClearedAfterTheDelay(t *testing.T) {
	env, w := newLoopEnv(t)
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "hello"))
	signalAt(env, 5*time.Second, workflows.SignalInbound, inbound("m1", "alice", "hello")) // a redelivery
	runFor(t, env)
	assert.Equal(t, []string{"You said: hello"}, w.texts())
	require.Len(t, w.delivered, 1)
	require.Len(t, w.delivered[0].ThenReact, 1, "the reply carries ✅")
	assert.Equal(t, pipeline.ReactionDone, w.delivered[0].ThenReact[0].State)
	require.NotEmpty(t, w.reactions)
	assert.Equal(t, pipeline.ReactionNone, w.reactions[len(w.reactions)-1].State, "✅ is cleared")
}

// payAgent asks for a payment first, then answers with what it got.
func payAgent(req pipeline.TurnRequest) pipeline.TurnResult {
	if len(req.Rounds) == 0 {
		return pipeline.TurnResult{Model: req.Model, ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: "pay", Arguments: `{"to":"bob"}`, RequiresApproval: true}}}
	}
	return pipeline.TurnResult{Model: req.Model, Reply: "paid: " + req.Rounds[0].Results[0].Output}
}

func TestAToolThatNeedsApprovalRunsOnceItIsApproved(t *testing.T) {
	env, w := newLoopEnv(t)
	w.agent = payAgent
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "pay bob"))
	signalAt(env, time.Minute, workflows.SignalProposal, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "web:boss"})
	runFor(t, env)
	require.Len(t, w.toolCalls, 1)
	texts := w.texts()
	require.Len(t, texts, 2, "the proposal, then the answer: %q", texts)
	assert.Equal(t, "paid: done", texts[1])
}

func TestAReloadThatArrivesWithAMessageHoldsNothingUp(t *testing.T) {
	env, w := newLoopEnv(t)
	w.agent = payAgent
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "pay bob"))
	signalAt(env, time.Second+time.Millisecond, workflows.SignalReload, workflows.ReloadRequest{By: "worker"})
	signalAt(env, time.Minute, workflows.SignalProposal, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "web:boss"})
	runFor(t, env)
	require.Len(t, w.toolCalls, 1)
	assert.Len(t, w.texts(), 2)
}

func TestAPressBySomeoneNotAllowedIsRefusedToThemAndRunsNothing(t *testing.T) {
	env, w := newLoopEnv(t)
	w.agent = payAgent
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "pay bob"))
	env.RegisterDelayedCallback(func() {
		press := inbound("press1", "mallory", "")
		press.Action = "approve:p1"
		w.mu.Lock()
		for _, d := range w.delivered {
			if len(d.Buttons) > 0 {
				press.ReplyTo = "p" + d.IdempotencyKey // the fake's ID of the proposal message
			}
		}
		w.mu.Unlock()
		require.NotEmpty(t, press.ReplyTo, "the proposal is out")
		env.SignalWorkflow(workflows.SignalInbound, press)
	}, time.Minute)
	signalAt(env, 2*time.Minute, workflows.SignalProposal, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionReject, By: "web:boss"})
	runFor(t, env)
	assert.Empty(t, w.toolCalls)
	var refusal []pipeline.Delivery
	for _, d := range w.delivered {
		if d.PrivateTo == "mallory" {
			refusal = append(refusal, d)
		}
	}
	require.Len(t, refusal, 1, "delivered: %q", w.texts())
	assert.Contains(t, refusal[0].Text, "web:mallory is not allowed to decide proposal p1")
}

// TestAPressOnAnotherMessageDecidesNothing is an owner's press on a
// button of another sender's p1, posted before buttons named their
// session, which reached the owner's own session and its own p1.
func TestAPressOnAnotherMessageDecidesNothing(t *testing.T) {
	env, w := newLoopEnv(t)
	w.agent = payAgent
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "boss", "pay bob"))
	press := inbound("press1", "boss", "")
	press.Action, press.ReplyTo = "approve:p1", "another-senders-proposal"
	signalAt(env, time.Minute, workflows.SignalInbound, press)
	signalAt(env, 2*time.Minute, workflows.SignalProposal, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionReject, By: "operator:eve"})
	runFor(t, env)
	assert.Empty(t, w.toolCalls, "the owner's own p1 is not approved by a press on another message")
	var refusal []pipeline.Delivery
	for _, d := range w.delivered {
		if d.PrivateTo == "boss" {
			refusal = append(refusal, d)
		}
	}
	require.Len(t, refusal, 1, "delivered: %q", w.texts())
	assert.Equal(t, "another-senders-proposal", refusal[0].ReplyTo, "told under the pressed message")
	assert.Contains(t, refusal[0].Text, "this button is not on the message of proposal p1 of this session")
}

func TestACarriedSessionWithNoIdleTimeCountsItsTTLFromItsStart(t *testing.T) {
	env, _ := newLoopEnv(t)
	start := env.Now()
	env.ExecuteWorkflow(WorkflowName, Params{Session: loopSession, State: &State{}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.GreaterOrEqual(t, env.Now().Sub(start), 24*time.Hour, "it completes after the idle TTL, not at once")
}

func TestATurnThatStartsAtOnceSendsNoReceivedReaction(t *testing.T) {
	env, w := newLoopEnv(t)
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "hello"))
	runFor(t, env)
	for _, r := range w.reactions {
		assert.NotEqual(t, pipeline.ReactionReceived, r.State, "with no debounce window, ✍️ replaces 👀 before it goes out")
	}
	assert.Len(t, w.reactions, 1, "the clear of ✅ alone: %+v", w.reactions)
}

// A failed attempt of a tool call is made again by Temporal only when the
// call's declaration allows it (a read-only tool); any other call is made
// once, and the model reads that it could not be run.
func TestAFailedToolAttemptIsMadeAgainOnlyWhenItsDeclarationAllows(t *testing.T) {
	for _, c := range []struct {
		name     string
		attempts int
		calls    int
		answer   string
	}{
		{"read-only", 3, 2, "got: done"},
		{"writing", 0, 1, "got: the tool could not be run: the server went away"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, w := newLoopEnv(t)
			w.agent = func(req pipeline.TurnRequest) pipeline.TurnResult {
				if len(req.Rounds) == 0 {
					return pipeline.TurnResult{Model: req.Model, ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: "docs__search", Arguments: `{}`,
						Attempts: c.attempts, Timeout: pipeline.Duration(10 * time.Second), Label: "mcp docs.search"}}}
				}
				return pipeline.TurnResult{Model: req.Model, Reply: "got: " + req.Rounds[0].Results[0].Output}
			}
			failed := false
			w.tool = func(inv pipeline.ToolInvocation) (pipeline.ToolResult, error) {
				if !failed {
					failed = true
					return pipeline.ToolResult{}, temporal.NewApplicationError("the server went away", "MCPToolError")
				}
				return pipeline.ToolResult{CallID: inv.Call.ID, Name: inv.Call.Name, Output: "done"}, nil
			}
			signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "look it up"))
			runFor(t, env)
			assert.Len(t, w.toolCalls, c.calls)
			texts := w.texts()
			require.Len(t, texts, 1)
			assert.Contains(t, texts[0], c.answer)
		})
	}
}

func TestAToolCallsActivityOptionsFollowItsDeclaration(t *testing.T) {
	call := func(c pipeline.ToolCall) RunTool {
		return RunTool{TurnID: "t1", Step: 0, Invocation: pipeline.ToolInvocation{Call: c}}
	}
	opts := toolOptions(call(pipeline.ToolCall{Name: "pay"}), time.Minute)
	assert.Equal(t, int32(1), opts.RetryPolicy.MaximumAttempts, "once, unless declared otherwise")
	assert.Equal(t, time.Minute, opts.StartToCloseTimeout)
	assert.Equal(t, "tool pay (turn t1 step 1)", opts.Summary)

	opts = toolOptions(call(pipeline.ToolCall{Name: "docs__search", Attempts: 50, Timeout: pipeline.Duration(10 * time.Second), Label: "mcp docs.search"}), time.Minute)
	assert.Equal(t, int32(maxToolAttempts), opts.RetryPolicy.MaximumAttempts, "bounded")
	assert.Equal(t, 10*time.Second+toolGrace, opts.StartToCloseTimeout, "the tool's own timeout, with room to report it")
	assert.Equal(t, time.Minute+queueAllowance, opts.ScheduleToCloseTimeout, "all attempts within the turn's time")
	assert.Equal(t, "mcp docs.search (turn t1 step 1)", opts.Summary)
}

// Signals taken together are each taken as sent: a member's message
// after an owner's keeps none of the owner's fields (the owner's rights,
// thread or files), which the signal's JSON leaves out when empty. The
// test workflow sleeps while both arrive, as a session's first task does
// after the server held its messages for a worker.
func TestSignalsTakenTogetherKeepOnlyTheirOwnFields(t *testing.T) {
	suite := &testsuite.WorkflowTestSuite{}
	env := suite.NewTestWorkflowEnvironment()
	type taken struct {
		Feedback []pipeline.Feedback
		Messages []pipeline.Inbound
	}
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (taken, error) {
		s := &session{ctx: ctx, signals: signalsOf(ctx)}
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return taken{}, err
		}
		s.takeSignals()
		var out taken
		for _, ev := range s.events {
			switch ev := ev.(type) {
			case FeedbackGiven:
				out.Feedback = append(out.Feedback, ev.Feedback)
			case MessageArrived:
				out.Messages = append(out.Messages, ev.In)
			}
		}
		return out, nil
	}, workflow.RegisterOptions{Name: "take-signals"})
	owner := inbound("m1", "boss", "look at this")
	owner.SenderIsOwner, owner.ThreadID, owner.MentionsBot = true, "t1", true
	owner.Media = []pipeline.Media{{Kind: "photo", Ref: "file-1", MimeType: "image/png"}}
	member := inbound("m2", "mallory", "/think high")
	liked := pipeline.Feedback{MessageID: "r1", Emoji: []string{"👍"}}
	plain := pipeline.Feedback{MessageID: "r2"}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalFeedback, liked)
		env.SignalWorkflow(workflows.SignalFeedback, plain)
		env.SignalWorkflow(workflows.SignalInbound, owner)
		env.SignalWorkflow(workflows.SignalInbound, member)
	}, time.Minute)
	env.ExecuteWorkflow("take-signals")
	require.NoError(t, env.GetWorkflowError())
	var got taken
	require.NoError(t, env.GetWorkflowResult(&got))
	assert.Equal(t, []pipeline.Feedback{liked, plain}, got.Feedback, "the second reaction has no emoji of the first")
	assert.Equal(t, []pipeline.Inbound{owner, member}, got.Messages, "the member's message is the member's alone")
}

func TestAToolCallThatTimedOutMayHaveActedUnlessItIsReadOnly(t *testing.T) {
	timeout := &Failure{Type: "Timeout", Cause: "it ran out of time (start_to_close)"}
	lost := &Failure{Type: FailureWorkerLost, Cause: "it ran out of time (heartbeat)"}
	refused := &Failure{Type: "ToolFailed", Cause: "the server went away"}
	writing, readOnly := pipeline.ToolCall{Name: "create"}, pipeline.ToolCall{Name: "lookup", Attempts: 3}
	for _, tc := range []struct {
		name string
		call pipeline.ToolCall
		f    *Failure
		want string
	}{
		{"writing, timed out", writing, timeout, "the tool's outcome is unknown: it ran out of time (start_to_close), and it may have acted before it stopped. Do not call it again without asking the user."},
		{"writing, worker lost", writing, lost, "the tool's outcome is unknown: it ran out of time (heartbeat), and it may have acted before it stopped. Do not call it again without asking the user."},
		{"writing, refused", writing, refused, "the tool could not be run: the server went away"},
		{"read-only, timed out", readOnly, timeout, "the tool could not be run: it ran out of time (start_to_close)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, failedToolOutput(tc.call, tc.f))
		})
	}
}
