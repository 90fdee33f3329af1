package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

var gatedChat = pipeline.Settings{
	Activation: pipeline.ActivationGated,
	GateModel:  "gate-model",
	Queue:      debounce(time.Second),
}

func gatedAt(d time.Duration) Env { return envWith(d, gatedChat) }

// gateCallOf is the one gate Call among effects.
func gateCallOf(t *testing.T, effects []Effect) Call {
	t.Helper()
	var calls []Call
	for _, e := range effects {
		if c, ok := e.(Call); ok {
			calls = append(calls, c)
		}
	}
	require.Len(t, calls, 1, "effects: %#v", effects)
	require.Equal(t, pipeline.ActivityGate, calls[0].Activity)
	return calls[0]
}

func gateRequestOf(t *testing.T, c Call) pipeline.GateRequest {
	t.Helper()
	require.Len(t, c.Args, 1)
	return c.Args[0].(pipeline.GateRequest)
}

func TestAGatedBatchGoesToTheGateWhenItsWindowCloses(t *testing.T) {
	var s EngagementState
	_, out := s.Engage(gatedAt(0), groupMsg("1", "alice", "hi"), TurnFacts{})
	require.Equal(t, []Effect{Arm{Timer: gateTimer, At: t0.Add(time.Second), Summary: "debounce 1 message(s) before the gate"}}, out)
	_, out = s.Engage(gatedAt(500*time.Millisecond), groupMsg("2", "bob", "anyone?"), TurnFacts{})
	assert.Empty(t, out, "a message moves the batch's time, not its timer")
	assert.True(t, s.GatePending())

	out = s.GateFired(gatedAt(time.Second), false)
	assert.Equal(t, []Effect{Arm{Timer: gateTimer, At: t0.Add(1500 * time.Millisecond), Summary: "debounce 2 message(s) before the gate"}}, out, "armed again for the rest of the window")

	c := gateCallOf(t, s.GateFired(gatedAt(1500*time.Millisecond), false))
	assert.Equal(t, "gate/1", c.Key)
	assert.True(t, GateKey(c.Key))
	assert.Equal(t, defaultGateTimeout, c.Timeout)
	req := gateRequestOf(t, c)
	require.Len(t, req.Batch, 2)
	assert.Equal(t, "anyone?", req.Batch[1].Text)
	assert.False(t, s.GatePending())
	assert.True(t, s.Busy(), "busy while the gate is asked")
}

func TestAGatedBatchOfASenderWhoNeverPausesGoesAtTheMaximumWait(t *testing.T) {
	var s EngagementState
	for i := range 8 {
		s.Engage(gatedAt(time.Duration(i)*900*time.Millisecond), groupMsg("m", "alice", "more"), TurnFacts{})
	}
	assert.Equal(t, t0.Add(defaultDebounceMaxWait), s.GateFlushAt)
	gateCallOf(t, s.GateFired(gatedAt(defaultDebounceMaxWait), false))
}

func TestAGatedBatchAtItsSizeBoundGoesAtOnce(t *testing.T) {
	var s EngagementState
	var out []Effect
	for i := range maxBufferedMessages {
		_, out = s.Engage(gatedAt(time.Duration(i)*time.Millisecond), groupMsg("m", "alice", "x"), TurnFacts{})
	}
	require.Len(t, out, 2)
	assert.Equal(t, Disarm{Timer: gateTimer}, out[0])
	assert.Len(t, gateRequestOf(t, gateCallOf(t, out)).Batch, maxBufferedMessages)
	assert.Empty(t, s.GateFired(gatedAt(time.Hour), false), "the sent batch's timer sends nothing")

	_, out = s.Engage(gatedAt(time.Second), groupMsg("n", "alice", "next"), TurnFacts{})
	assert.IsType(t, Arm{}, out[0], "the next message starts a new batch")
	assert.Equal(t, 2, s.GateSeq)
}

func TestAGatedMessageIsObservedWhenNoGateIsAsked(t *testing.T) {
	tests := []struct {
		name     string
		settings pipeline.Settings
		turns    TurnFacts
	}{
		{name: "no gate model", settings: pipeline.Settings{Activation: pipeline.ActivationGated}},
		{name: "a turn runs", settings: gatedChat, turns: TurnFacts{TurnRunning: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s EngagementState
			result, out := s.Engage(envWith(0, tt.settings), groupMsg("1", "alice", "hi"), tt.turns)
			assert.Equal(t, pipeline.DecisionGate, result.Decision)
			assert.Empty(t, out)
			assert.False(t, s.GatePending())
			assert.Len(t, s.Observed, 1)
		})
	}
}

func TestAGatedBatchWhoseWindowClosesDuringATurnIsObserved(t *testing.T) {
	var s EngagementState
	s.Engage(gatedAt(0), groupMsg("1", "alice", "hi"), TurnFacts{})
	assert.Empty(t, s.GateFired(gatedAt(time.Second), true))
	assert.False(t, s.GatePending())
	assert.False(t, s.Busy())
	assert.Len(t, s.Observed, 1)
}

func TestTheGateSeesTheLatestObservedMessagesAndNamedAliases(t *testing.T) {
	var s EngagementState
	for i := range 10 {
		s.observe(gatedAt(0), groupMsg("o", "carol", "said "+string(rune('a'+i))))
	}
	env := gatedAt(0)
	env.Settings.Aliases = []string{"robo"}
	s.Engage(env, groupMsg("1", "alice", "hi"), TurnFacts{})
	s.Engage(env, groupMsg("2", "bob", "ask Robo"), TurnFacts{})
	env.Now = env.Now.Add(time.Second)
	req := gateRequestOf(t, gateCallOf(t, s.GateFired(env, false)))
	require.Len(t, req.Context, pipeline.GateContext-2, "GateContext messages in all")
	assert.Equal(t, "said j", req.Context[len(req.Context)-1].Text)
	assert.True(t, req.IndirectMention)
}

// askedGate is a chat whose batch of two the gate is being asked about,
// with ten observed messages before it.
func askedGate(t *testing.T) (EngagementState, Call) {
	var s EngagementState
	for range 10 {
		s.observe(gatedAt(0), groupMsg("o", "carol", "chatter"))
	}
	s.Engage(gatedAt(0), groupMsg("1", "alice", "hi"), TurnFacts{})
	s.Engage(gatedAt(0), groupMsg("2", "bob", "anyone?"), TurnFacts{})
	return s, gateCallOf(t, s.GateFired(gatedAt(time.Second), false))
}

func TestAForwardedBatchGoesToATurnThatAnchorsNoReply(t *testing.T) {
	s, c := askedGate(t)
	queue := debounce(3 * time.Second)
	out := s.Gated(gatedAt(2*time.Second), Returned{Key: c.Key, Output: &pipeline.GateResult{Forward: true, Reason: "a question"}}, queue)
	require.Len(t, out, 3)
	assert.Equal(t, Emit{ReactionsWanted{Refs: []msgRef{{ID: "1"}, {ID: "2"}}, State: pipeline.ReactionReceived}}, out[0])
	assert.Equal(t, gateMetric("forward"), out[2])
	batch := out[1].(Emit).Event.(BatchReady).Batch
	assert.True(t, batch.NoAnchor)
	assert.Equal(t, queue, batch.Queue)
	assert.Equal(t, "anyone?", batch.Last().Text)
	assert.Len(t, s.Observed, pipeline.GateContext-2, "the turn sees what the gate saw")
	assert.Equal(t, 1, s.Counts.Gated)
	assert.False(t, s.Busy())
}

func TestABatchTheGateDoesNotForwardIsObserved(t *testing.T) {
	tests := []struct {
		name     string
		ev       func(key string) Returned
		decision string
	}{
		{name: "skip", ev: func(key string) Returned {
			return Returned{Key: key, Output: &pipeline.GateResult{Reason: "small talk"}}
		}, decision: "skip"},
		{name: "failed", ev: func(key string) Returned {
			return Returned{Key: key, Failure: &Failure{Type: "Timeout", Message: "gate took too long"}}
		}, decision: "failed"},
		{name: "no output", ev: func(key string) Returned { return Returned{Key: key} }, decision: "skip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := askedGate(t)
			assert.Equal(t, []Effect{gateMetric(tt.decision)}, s.Gated(gatedAt(2*time.Second), tt.ev(c.Key), debounce(time.Second)), "counted, and nothing else")
			assert.Len(t, s.Observed, 12)
			assert.Equal(t, "anyone?", s.Observed[11].Text)
			assert.Zero(t, s.Counts.Gated)
			assert.False(t, s.Busy())
		})
	}
}

func TestAnAnswerOfNoGateCallChangesNothing(t *testing.T) {
	s, _ := askedGate(t)
	assert.Empty(t, s.Gated(gatedAt(2*time.Second), Returned{Key: "gate/99", Output: &pipeline.GateResult{Forward: true}}, debounce(time.Second)))
	assert.True(t, s.Busy())
}

func TestAnEngagedMessageTurnsThePendingGatedBatchIntoContext(t *testing.T) {
	var s EngagementState
	s.Engage(gatedAt(0), groupMsg("1", "alice", "hi"), TurnFacts{})
	result, out := s.Engage(gatedAt(500*time.Millisecond), mentions(groupMsg("2", "bob", "@bot help")), TurnFacts{})
	assert.Equal(t, pipeline.DecisionEngage, result.Decision)
	assert.Equal(t, []Effect{Disarm{Timer: gateTimer}}, out)
	assert.False(t, s.GatePending())
	require.Len(t, s.Observed, 1)
	assert.Equal(t, "hi", s.Observed[0].Text)

	_, out = s.Engage(gatedAt(time.Second), mentions(groupMsg("3", "bob", "@bot again")), TurnFacts{})
	assert.Empty(t, out, "with no batch pending there is no timer to disarm")
}

func TestGateCallsUnderWayAreBounded(t *testing.T) {
	var s EngagementState
	for i := range maxGateCalls + 1 {
		big := groupMsg("m", "alice", strings.Repeat("x", maxBufferedBytes))
		_, out := s.Engage(gatedAt(time.Duration(i)*time.Second), big, TurnFacts{})
		if i < maxGateCalls {
			gateCallOf(t, out)
			continue
		}
		assert.Equal(t, []Effect{Disarm{Timer: gateTimer}}, out, "one call too many is not made")
	}
	assert.Len(t, s.GateCalls, maxGateCalls)
	assert.Len(t, s.Observed, 1)
}

func TestResumeArmsTheCarriedBatchAndObservesWhatWasBeingAsked(t *testing.T) {
	s, _ := askedGate(t)
	s.Engage(gatedAt(2*time.Second), groupMsg("3", "dan", "still here"), TurnFacts{})
	out := s.Resume(gatedAt(time.Minute))
	assert.Equal(t, []Effect{Arm{Timer: gateTimer, At: t0.Add(3 * time.Second), Summary: "debounce 1 message(s) before the gate"}}, out)
	assert.False(t, s.Busy())
	assert.Len(t, s.Observed, 12, "the batch whose answer this run never gets is context")
}
