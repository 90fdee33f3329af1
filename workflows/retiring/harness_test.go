package retiring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// fakePlatform stands in for the activities: it records every side effect
// with the simulated time at which it happened.
type fakePlatform struct {
	// retires: the run retires into the chat session workflow at its
	// first quiet point (retiring).
	retires  bool
	env      *testsuite.TestWorkflowEnvironment
	start    time.Time
	settings pipeline.Settings
	// agentDelay is how long a model step takes in simulated time.
	agentDelay time.Duration
	// agent computes a model step's result; nil echoes the text.
	agent func(pipeline.TurnRequest) (pipeline.TurnResult, error)
	// refuse, when set, fails the deliveries it returns an error for.
	refuse   func(pipeline.Delivery) error
	attempts int
	// refuseReaction, when set, fails the reaction changes it returns an
	// error for.
	refuseReaction func(pipeline.ReactionChange) error

	mu    sync.Mutex
	saved []pipeline.SessionSettings
	tools []pipeline.ToolCall
	// toolStores says, per tool call, whether the session asked for its
	// result to be stored (ToolInvocation.StoreResult).
	toolStores []bool
	edits      []pipeline.Edit
	gates      []pipeline.GateRequest
	// gate answers the gate model; nil forwards.
	gate      func(pipeline.GateRequest) (pipeline.GateResult, error)
	steps     []step
	sent      []sent
	reactions []reactionCall
	feedback  []pipeline.Feedback
	// refuseFeedback, when set, fails the feedback records it returns an
	// error for.
	refuseFeedback func(pipeline.Feedback) error
}

type step struct {
	Req pipeline.TurnRequest
	At  time.Duration
}

type sent struct {
	pipeline.Delivery
	At time.Duration
}

type reactionCall struct {
	MessageID string
	State     pipeline.ReactionState
	At        time.Duration
	// ByDelivery: a delivery carried it (Delivery.ThenReact), not a
	// SetReaction activity.
	ByDelivery bool
}

var testStart = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func testSettings() pipeline.Settings {
	return pipeline.Settings{
		Models:             []string{"demo/echo"},
		ReactionClearDelay: pipeline.Duration(time.Minute), ErrorClearDelay: pipeline.Duration(10 * time.Minute),
		IdleTTL: pipeline.Duration(24 * time.Hour), ChunkLimit: 4000,
		TurnTimeout: pipeline.Duration(time.Minute), TurnHeartbeatTimeout: pipeline.Duration(20 * time.Second), TurnAttempts: 2,
		MaxSteps:        4,
		Owners:          []string{"webchat:boss"},
		ProposalTTL:     pipeline.Duration(24 * time.Hour),
		DeliveryTimeout: pipeline.Duration(10 * time.Second), DeliveryDeadline: pipeline.Duration(10 * time.Minute),
		Queue: pipeline.QueueSettings{Mode: pipeline.QueueFollowup, Debounce: 0, Cap: 20, Drop: pipeline.DropSummarize},
	}
}

// newEnv builds a test environment; options adjust the fake before the
// activities are registered.
func newEnv(t *testing.T, options ...func(*fakePlatform)) (*testsuite.TestWorkflowEnvironment, *fakePlatform) {
	return newEnvAt(t, testStart, options...)
}

func newEnvAt(t *testing.T, start time.Time, options ...func(*fakePlatform)) (*testsuite.TestWorkflowEnvironment, *fakePlatform) {
	return newEnvOn(t, &testsuite.WorkflowTestSuite{}, start, options...)
}

// newEnvOn is newEnvAt on a suite the caller set up (a metrics handler).
func newEnvOn(t *testing.T, suite *testsuite.WorkflowTestSuite, start time.Time, options ...func(*fakePlatform)) (*testsuite.TestWorkflowEnvironment, *fakePlatform) {
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	p := &fakePlatform{env: env, start: testStart, settings: testSettings()}
	for _, o := range options {
		o(p)
	}
	env.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	if !p.retires {
		// A run of the members release retires into the chat session
		// workflow at its first quiet point (changeRetire); these tests
		// see it run on, as a replay of its history does.
		env.OnGetVersion(changeRetire+"/0", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) (pipeline.Settings, error) {
		return p.settings, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityLoadSettings})
	env.RegisterActivityWithOptions(p.agentTurn, activity.RegisterOptions{Name: pipeline.ActivityAgentTurn})
	env.RegisterActivityWithOptions(p.deliver, activity.RegisterOptions{Name: pipeline.ActivityDeliver})
	env.RegisterActivityWithOptions(p.setReaction, activity.RegisterOptions{Name: pipeline.ActivitySetReaction})
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.GateRequest) (pipeline.GateResult, error) {
		p.mu.Lock()
		p.gates = append(p.gates, req)
		gate := p.gate
		p.mu.Unlock()
		if gate == nil {
			return pipeline.GateResult{Forward: true, Reason: "asked"}, nil
		}
		return gate(req)
	}, activity.RegisterOptions{Name: pipeline.ActivityGate})
	env.RegisterActivityWithOptions(func(_ context.Context, e pipeline.Edit) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.edits = append(p.edits, e)
		return nil
	}, activity.RegisterOptions{Name: pipeline.ActivityEdit})
	env.RegisterActivityWithOptions(func(_ context.Context, inv pipeline.ToolInvocation) (pipeline.ToolResult, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.tools = append(p.tools, inv.Call)
		p.toolStores = append(p.toolStores, inv.StoreResult)
		// As activities.RunTool: a result asked to be stored says it is.
		return pipeline.ToolResult{CallID: inv.Call.ID, Name: inv.Call.Name, Output: "tool output for " + inv.Call.Name, Stored: inv.StoreResult}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRunTool})
	env.RegisterActivityWithOptions(func(_ context.Context, _ pipeline.SessionKey, s pipeline.SessionSettings) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.saved = append(p.saved, s)
		return nil
	}, activity.RegisterOptions{Name: pipeline.ActivitySaveSession})
	env.RegisterActivityWithOptions(func(_ context.Context, f pipeline.Feedback) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.refuseFeedback != nil {
			if err := p.refuseFeedback(f); err != nil {
				return err
			}
		}
		p.feedback = append(p.feedback, f)
		return nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRecordFeedback})
	if p.agentDelay > 0 {
		env.OnActivity(pipeline.ActivityAgentTurn, mock.Anything, mock.Anything).After(p.agentDelay).Return(p.agentTurn)
	}
	return env, p
}

func withDebounce(d time.Duration) func(*fakePlatform) {
	return func(p *fakePlatform) { p.settings.Queue.Debounce = pipeline.Duration(d) }
}

// withMembersOpen lets every sender set what only owners set by default
// (REPLYFLOW_MEMBER_SETTINGS naming them all), for tests of what the
// settings do rather than of who may set them.
func withMembersOpen() func(*fakePlatform) {
	return func(p *fakePlatform) { p.settings.MemberSettings = pipeline.MemberSettingNames }
}

func withQueue(mode pipeline.QueueMode) func(*fakePlatform) {
	return func(p *fakePlatform) { p.settings.Queue.Mode = mode }
}

func withSlowModel(d time.Duration) func(*fakePlatform) {
	return func(p *fakePlatform) { p.agentDelay = d }
}

func (p *fakePlatform) elapsed() time.Duration { return p.env.Now().Sub(p.start) }

func (p *fakePlatform) agentTurn(_ context.Context, req pipeline.TurnRequest) (pipeline.TurnResult, error) {
	p.mu.Lock()
	p.steps = append(p.steps, step{Req: req, At: p.elapsed()})
	agent := p.agent
	p.mu.Unlock()
	if agent != nil {
		return agent(req)
	}
	return pipeline.TurnResult{Reply: "echo " + req.Text, Model: req.Model}, nil
}

func (p *fakePlatform) deliver(_ context.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts++
	if p.refuse != nil {
		if err := p.refuse(d); err != nil {
			return pipeline.Delivered{}, err
		}
	}
	p.sent = append(p.sent, sent{Delivery: d, At: p.elapsed()})
	out := pipeline.Delivered{PlatformMessageID: fmt.Sprintf("bot-%d", len(p.sent))}
	// As activities.Deliver: the reactions it carries, once the chunk is out.
	for _, r := range d.ThenReact {
		if p.refuseReaction != nil {
			if err := p.refuseReaction(r); err != nil {
				out.ReactionsFailed = append(out.ReactionsFailed, r.MessageID)
				continue
			}
		}
		p.reactions = append(p.reactions, reactionCall{MessageID: r.MessageID, State: r.State, At: p.elapsed(), ByDelivery: true})
	}
	return out, nil
}

func (p *fakePlatform) setReaction(_ context.Context, r pipeline.ReactionChange) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuseReaction != nil {
		if err := p.refuseReaction(r); err != nil {
			return err
		}
	}
	p.reactions = append(p.reactions, reactionCall{MessageID: r.MessageID, State: r.State, At: p.elapsed()})
	return nil
}

// replies are the texts delivered, in order.
func (p *fakePlatform) replies() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.sent))
	for i, s := range p.sent {
		out[i] = s.Text
	}
	return out
}

// sentDeliveries are the deliveries that succeeded, in order.
func (p *fakePlatform) sentDeliveries() []pipeline.Delivery {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]pipeline.Delivery, len(p.sent))
	for i, s := range p.sent {
		out[i] = s.Delivery
	}
	return out
}

// turnTexts are the texts of every model step, in order.
func (p *fakePlatform) turnTexts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.steps))
	for i, s := range p.steps {
		out[i] = s.Req.Text
	}
	return out
}

func (p *fakePlatform) statesOf(messageID string) []pipeline.ReactionState {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []pipeline.ReactionState
	for _, r := range p.reactions {
		if r.MessageID == messageID {
			out = append(out, r.State)
		}
	}
	return out
}

func (p *fakePlatform) clearedAt(messageID string) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.reactions {
		if r.MessageID == messageID && r.State == pipeline.ReactionNone {
			return r.At, true
		}
	}
	return 0, false
}

var demoSession = pipeline.SessionKey{Channel: "webchat", Chat: "demo"}

func inbound(id, text string) pipeline.Inbound {
	return pipeline.Inbound{Channel: "webchat", ChatID: "demo", MessageID: id, SenderID: "alice", Text: text, ReceivedAt: testStart}
}

func signalAt(env *testsuite.TestWorkflowEnvironment, at time.Duration, in pipeline.Inbound) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalInbound, in) }, at)
}

// run executes the session until it completes (idle TTL) and fails the test
// on a workflow error.
func run(t *testing.T, env *testsuite.TestWorkflowEnvironment, state *State) {
	t.Helper()
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession, State: state})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// queryStateAt queries the state at a simulated time; the snapshot is
// filled in once the workflow has run past it. A query that never ran (the
// workflow ended first) fails the test, so an assertion that the snapshot
// is empty cannot pass on a snapshot nobody took.
func queryStateAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration) *Snapshot {
	t.Helper()
	snap := &Snapshot{}
	taken := false
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(snap))
		taken = true
	}, at)
	t.Cleanup(func() {
		if !taken {
			t.Errorf("the state query at %s never ran: the workflow ended before it, so the snapshot is empty", at)
		}
	})
	return snap
}

// continuedState returns the state a run handed to continue-as-new.
func continuedState(t *testing.T, env *testsuite.TestWorkflowEnvironment) *State {
	t.Helper()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	if can.Input == nil || len(can.Input.Payloads) != 1 {
		require.Fail(t, "continue-as-new has no single input")
	}
	var next SessionParams
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(can.Input.Payloads[0], &next))
	require.NotNil(t, next.State)
	return next.State
}

var errModelDown = errors.New("model down")

// runsFromBefore makes env's session a run that began before change:
// it records neither that change nor any newer one, as the code of its
// time did not know them.
//
// It also runs on that code to its end: it never moves on to the newest
// release at a quiet point (runsFromBeforeAndMovesOn does).
func runsFromBefore(env *testsuite.TestWorkflowEnvironment, change string) {
	runsFromBeforeAndMovesOn(env, change)
	// The test environment's history length stays 0: every task's check
	// has this ID.
	env.OnGetVersion(changeMoveOn+"/0", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
}

// runsFromBeforeAndMovesOn is runsFromBefore for a run that the newest
// code executes: at its first quiet point it continues as new.
func runsFromBeforeAndMovesOn(env *testsuite.TestWorkflowEnvironment, change string) {
	for _, c := range changesInOrder[slices.Index(changesInOrder, change):] {
		env.OnGetVersion(c, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
}
