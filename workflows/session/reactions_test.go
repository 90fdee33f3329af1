package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

func clearAfter(env Env, done, failed time.Duration) Env {
	env.Settings.ReactionClearDelay = pipeline.Duration(done)
	env.Settings.ErrorClearDelay = pipeline.Duration(failed)
	return env
}

// applies are the reaction changes among effects.
func applies(effects []Effect) []pipeline.ReactionChange {
	var out []pipeline.ReactionChange
	for _, e := range effects {
		if a, ok := e.(ApplyReaction); ok {
			out = append(out, a.Change)
		}
	}
	return out
}

func arms(effects []Effect) []Arm {
	var out []Arm
	for _, e := range effects {
		if a, ok := e.(Arm); ok {
			out = append(out, a)
		}
	}
	return out
}

func TestReactionChangesGoOutOneAtATimeInOrder(t *testing.T) {
	var s ReactionsState
	env := envAt(0)
	assert.Empty(t, applies(s.React(env, refsOf(msg("1", "u")), pipeline.ReactionReceived)), "changes start once the pass is answered")
	first := s.Apply(env)
	require.Len(t, applies(first), 1)
	s.React(env, refsOf(msg("2", "u")), pipeline.ReactionReceived)
	assert.Empty(t, s.Apply(env), "the second waits for the first")
	s.Applied(env, ReactionApplied{Change: applies(first)[0]})
	next := s.Apply(env)
	require.Len(t, applies(next), 1)
	assert.Equal(t, "2", applies(next)[0].MessageID)
	s.Applied(env, ReactionApplied{Change: applies(next)[0]})
	assert.Empty(t, s.Apply(env))
	assert.False(t, s.Busy())
}

func TestThinkingIsLeftToTheModelStepAndAWaitingChangeGivesWay(t *testing.T) {
	var s ReactionsState
	env := envAt(0)
	s.React(env, refsOf(msg("1", "u")), pipeline.ReactionReceived)
	s.Apply(env)                                                   // applying
	s.React(env, refsOf(msg("2", "u")), pipeline.ReactionReceived) // waiting
	s.React(env, refsOf(msg("2", "u")), pipeline.ReactionThinking)
	require.Len(t, s.Changes, 1, "the model step shows ✍️ itself: 👀 on 2 is not applied")
	assert.Equal(t, "1", s.Changes[0].MessageID)
}

func TestDoneIsClearedAfterTheDelayByOneSharedTimer(t *testing.T) {
	var s ReactionsState
	env := clearAfter(envAt(0), 10*time.Minute, time.Hour)
	out := s.React(env, refsOf(msg("1", "u"), msg("2", "u")), pipeline.ReactionDone)
	require.Len(t, arms(out), 1)
	assert.Equal(t, t0.Add(10*time.Minute), arms(out)[0].At)
	s.Apply(env)
	s.Applied(env, ReactionApplied{Change: s.Changes[0]})
	s.Apply(env)
	s.Applied(env, ReactionApplied{Change: s.Changes[0]})
	later := clearAfter(envAt(10*time.Minute), 10*time.Minute, time.Hour)
	s.Fired(later)
	fired := s.Apply(later)
	require.Len(t, applies(fired), 1)
	assert.Equal(t, pipeline.ReactionNone, applies(fired)[0].State)
	assert.Len(t, s.Changes, 2, "both clears are queued from one timer")
}

func TestAFailedFinalReactionIsRetriedLaterAndARefusedOneIsNot(t *testing.T) {
	var s ReactionsState
	env := clearAfter(envAt(0), time.Hour, time.Hour)
	s.React(env, refsOf(msg("1", "u")), pipeline.ReactionDone)
	change := applies(s.Apply(env))[0]
	retry := s.Applied(env, ReactionApplied{Change: change, Failure: &Failure{Type: "Unavailable"}})
	require.NotEmpty(t, arms(retry))
	assert.Equal(t, t0.Add(reactionRetryBase), arms(retry)[0].At, "the retry comes before the clear")
	later := clearAfter(envAt(reactionRetryBase), time.Hour, time.Hour)
	s.Fired(later)
	again := s.Apply(later)
	require.Len(t, applies(again), 1)
	assert.Equal(t, 1, applies(again)[0].Attempt)

	var refused ReactionsState
	refused.React(env, refsOf(msg("2", "u")), pipeline.ReactionDone)
	refused.Applied(env, ReactionApplied{Change: applies(refused.Apply(env))[0], Failure: &Failure{Type: "PlatformRejected"}})
	assert.Empty(t, refused.Apply(env))
	assert.Zero(t, refused.Reactions[0].RetryAt)
}

func TestTheLastChunkCarriesTheDoneReactionUnlessOneOfItsMessagesIsBeingApplied(t *testing.T) {
	var s ReactionsState
	env := clearAfter(envAt(0), time.Minute, time.Hour)
	s.React(env, refsOf(msg("1", "u")), pipeline.ReactionReceived)
	s.Apply(env) // 👀 on 1 is applying
	d := Deliver{TurnID: "t1", Delivery: pipeline.Delivery{Index: 0}}
	assert.False(t, s.Carry(env, &d, refsOf(msg("1", "u")), pipeline.ReactionDone), "✅ must land after 👀")
	s.Applied(env, ReactionApplied{Change: s.Changes[0]})
	require.True(t, s.Carry(env, &d, refsOf(msg("1", "u")), pipeline.ReactionDone))
	require.Len(t, d.Delivery.ThenReact, 1)
	out := s.Delivered(env, ChunkDelivered{TurnID: "t1", Index: 0})
	assert.Empty(t, applies(out), "the delivery set ✅ itself")
	assert.Len(t, arms(out), 1, "and its clear is scheduled")
	assert.True(t, s.Reactions[0].Shown)
}

func TestACarriedReactionThePlatformRefusedIsAppliedTheUsualWay(t *testing.T) {
	var s ReactionsState
	env := clearAfter(envAt(0), time.Minute, time.Hour)
	d := Deliver{TurnID: "t1", Delivery: pipeline.Delivery{Index: 2}}
	require.True(t, s.Carry(env, &d, refsOf(msg("1", "u")), pipeline.ReactionDone))
	s.Delivered(env, ChunkDelivered{TurnID: "t1", Index: 2, Delivered: pipeline.Delivered{ReactionsFailed: []string{"1"}}})
	out := s.Apply(env)
	require.Len(t, applies(out), 1)
	assert.Equal(t, pipeline.ReactionDone, applies(out)[0].State)
}

func TestTrackedReactionsAreBounded(t *testing.T) {
	var s ReactionsState
	env := envAt(0)
	for i := range maxReactions + 10 {
		s.React(env, []msgRef{{ID: string(rune(0x1000 + i))}}, pipeline.ReactionReceived)
	}
	assert.Len(t, s.Reactions, maxReactions)
}

func TestALastChunkHeldForAChangeBeingAppliedGoesOutWhenItLands(t *testing.T) {
	var s ReactionsState
	env := clearAfter(envAt(0), time.Minute, time.Hour)
	s.React(env, refsOf(msg("1", "u")), pipeline.ReactionReceived)
	s.Apply(env)
	last := LastChunkReady{Deliver: Deliver{TurnID: "t1"}, Refs: refsOf(msg("1", "u")), State: pipeline.ReactionDone}
	assert.Empty(t, s.DeliverLast(env, last))
	out := s.Applied(env, ReactionApplied{Change: s.Changes[0]})
	d := only[Deliver](t, out)
	require.Len(t, d.Delivery.ThenReact, 1)
	assert.Nil(t, s.Held)
}

func TestAClearThatRunsOverAMinuteLateIsCounted(t *testing.T) {
	var s ReactionsState
	env := clearAfter(envAt(0), time.Minute, time.Hour)
	s.React(env, refsOf(msg("1", "u")), pipeline.ReactionDone)
	s.Applied(env, ReactionApplied{Change: applies(s.Apply(env))[0]})
	onTime := s.Fired(clearAfter(envAt(time.Minute), time.Minute, time.Hour))
	assert.NotContains(t, onTime, Effect(Count{Name: workflows.MetricReactionsClearedLate, Tags: map[string]string{"channel": "web"}}))

	var late ReactionsState
	late.React(env, refsOf(msg("2", "u")), pipeline.ReactionDone)
	late.Applied(env, ReactionApplied{Change: applies(late.Apply(env))[0]})
	out := late.Fired(clearAfter(envAt(5*time.Minute), time.Minute, time.Hour))
	assert.Contains(t, out, Effect(Count{Name: workflows.MetricReactionsClearedLate, Tags: map[string]string{"channel": "web"}}))
}
