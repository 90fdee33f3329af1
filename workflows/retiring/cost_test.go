package retiring

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/pipeline"
)

// timersOf records the durations of the timers a session starts.
func timersOf(env *testsuite.TestWorkflowEnvironment) func() []time.Duration {
	var mu sync.Mutex
	var started []time.Duration
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, d)
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), started...)
	}
}

func countWithin(ds []time.Duration, lo, hi time.Duration) int {
	n := 0
	for _, d := range ds {
		if d >= lo && d <= hi {
			n++
		}
	}
	return n
}

// The reply's last chunk carries the done reaction: no activity of its
// own, and only the last chunk carries it.
func TestTheDoneReactionRidesOnTheLastChunk(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) { p.settings.ChunkLimit = 16 })
	signalAt(env, time.Second, inbound("m1", "a reply long enough for two chunks"))
	run(t, env, nil)

	require.GreaterOrEqual(t, len(p.sent), 2)
	for _, d := range p.sent[:len(p.sent)-1] {
		assert.Empty(t, d.ThenReact, "chunk %d carries nothing", d.Index)
	}
	last := p.sent[len(p.sent)-1]
	require.Len(t, last.ThenReact, 1)
	assert.Equal(t, pipeline.ReactionChange{Session: last.Session, MessageID: "m1", State: pipeline.ReactionDone}, last.ThenReact[0])
	var done, cleared []reactionCall
	for _, r := range p.reactions {
		switch r.State {
		case pipeline.ReactionDone:
			done = append(done, r)
		case pipeline.ReactionNone:
			cleared = append(cleared, r)
		}
	}
	require.Len(t, done, 1)
	assert.True(t, done[0].ByDelivery, "✅ came with the delivery, not a reaction activity")
	require.Len(t, cleared, 1)
	assert.False(t, cleared[0].ByDelivery)
	assert.Equal(t, time.Second+time.Minute, cleared[0].At, "cleared 60 s after the reply, by its timer")
}

// A done reaction the platform refused with the delivery is set again the
// usual way, so it is still cleared in the end.
func TestARefusedCarriedReactionIsSetTheUsualWay(t *testing.T) {
	refused := false
	env, p := newEnv(t, func(p *fakePlatform) {
		p.refuseReaction = func(r pipeline.ReactionChange) error {
			if r.State == pipeline.ReactionDone && !refused {
				refused = true
				return temporal.NewApplicationError("rate limited", "RateLimited")
			}
			return nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	assert.True(t, refused)
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"), "the refused ✅ set again by an activity, then cleared")
	assert.False(t, p.reactions[0].ByDelivery)
}

// With REPLYFLOW_REACTION_CLEAR_DELAY=0 the reply's delivery takes the
// reaction off: no done state, no clear timer.
func TestAZeroClearDelayClearsWithTheReply(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Second), func(p *fakePlatform) { p.settings.ReactionClearDelay = 0 })
	timers := timersOf(env)
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionNone}, p.statesOf("m1"), "👀 while debounced, taken off by the reply")
	require.Len(t, p.sent, 1)
	require.Len(t, p.sent[0].ThenReact, 1)
	assert.Equal(t, pipeline.ReactionNone, p.sent[0].ThenReact[0].State)
	assert.Equal(t, 0, countWithin(timers(), 30*time.Second, 2*time.Minute), "no clear timer")
}

// The clears of turns a few seconds apart share one timer.
func TestPendingClearsShareOneTimer(t *testing.T) {
	env, p := newEnv(t)
	timers := timersOf(env)
	signalAt(env, time.Second, inbound("m1", "one"))
	signalAt(env, 4*time.Second, inbound("m2", "two"))
	run(t, env, nil)

	at1, ok1 := p.clearedAt("m1")
	at2, ok2 := p.clearedAt("m2")
	require.True(t, ok1 && ok2)
	assert.Equal(t, time.Second+time.Minute, at1)
	assert.Equal(t, at1, at2, "m2's clear, due 3 s later, shares m1's timer (at most clearShare early)")
	assert.Equal(t, 1, countWithin(timers(), 50*time.Second, time.Minute), "one clear timer for both: %v", timers())
}

// A session keeps one idle timer across its turns: it is armed when the
// session first waits, fires once the TTL after, finds people spoke since,
// and is armed once more for what is left.
func TestTheIdleTimerOutlivesTurns(t *testing.T) {
	env, _ := newEnv(t)
	timers := timersOf(env)
	for h := range 6 {
		signalAt(env, time.Duration(h)*time.Hour+time.Second, inbound("m"+string(rune('a'+h)), "hello"))
	}
	run(t, env, nil)

	long := countWithin(timers(), time.Hour, 48*time.Hour)
	assert.Equal(t, 2, long, "one idle timer, armed again once, for six turns: %v", timers())
	assert.Equal(t, 5*time.Hour+time.Second+time.Minute+24*time.Hour, env.Now().Sub(testStart), "completes the TTL after the last clear")
}

// The first chunk goes out in a local activity; when that fails, the
// chunk is retried as an activity, and the session shows delivering
// meanwhile.
func TestAFirstChunkThatFailsAtOnceIsRetriedAsAnActivity(t *testing.T) {
	failures := 2
	env, p := newEnv(t, func(p *fakePlatform) {
		p.refuse = func(pipeline.Delivery) error {
			if failures > 0 {
				failures--
				return temporal.NewApplicationError("Telegram is down", "Transient")
			}
			return nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	during := queryStateAt(t, env, 1500*time.Millisecond)
	run(t, env, nil)

	assert.Equal(t, 3, p.attempts, "the local attempt, then the activity's two")
	require.Len(t, p.sent, 1)
	assert.Equal(t, StatusDelivering, during.Status, "off the fast path, the session shows delivering")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"))
}

// Only the states that last are published as search attributes: a
// debounced message goes idle → thinking → idle in two upserts, its time
// with the first.
func TestTransientStatesAreNotPublished(t *testing.T) {
	env, _ := newEnv(t, withDebounce(time.Second))
	var mu sync.Mutex
	var states []string
	var withTime []bool
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		mu.Lock()
		defer mu.Unlock()
		if v, ok := sa.GetKeyword(AttrState); ok {
			states = append(states, v)
			_, has := sa.GetTime(AttrLastInboundAt)
			withTime = append(withTime, has)
		}
	}).Return(nil)
	signalAt(env, time.Second, inbound("m1", "hi"))
	signalAt(env, 5*time.Minute, inbound("m2", "again"))
	run(t, env, nil)

	require.GreaterOrEqual(t, len(states), 2)
	assert.Equal(t, []string{"thinking", "idle"}, states[len(states)-2:], "the second message: debouncing is not published")
	assert.NotContains(t, states, string(StatusDebouncing))
	assert.Equal(t, []bool{true, false}, withTime[len(withTime)-2:], "its time goes with the turn's state, in one upsert")
}

// Later model steps read the earlier tool results from the store: their
// requests carry references, not the outputs.
func TestToolResultsReachLaterStepsByReference(t *testing.T) {
	env, p := newEnv(t)
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		if req.Step < 2 {
			return pipeline.TurnResult{Model: req.Model, ToolCalls: []pipeline.ToolCall{{ID: "c" + string(rune('0'+req.Step)), Name: "lookup", Arguments: `{}`}}}, nil
		}
		return pipeline.TurnResult{Model: req.Model, Reply: "found it"}, nil
	}
	signalAt(env, time.Second, inbound("m1", "look it up"))
	run(t, env, nil)

	require.Len(t, p.steps, 3)
	assert.Equal(t, []bool{true, true}, p.toolStores, "each tool result is stored")
	last := p.steps[2].Req.Rounds
	require.Len(t, last, 2)
	for _, round := range last {
		require.Len(t, round.Results, 1)
		assert.True(t, round.Results[0].Stored)
		assert.Empty(t, round.Results[0].Output, "the output stays in the store")
		assert.Len(t, round.Calls, 1, "the calls themselves are carried")
	}
	assert.Equal(t, []string{"found it"}, p.replies())
	assert.True(t, strings.HasPrefix(p.steps[1].Req.Rounds[0].Results[0].CallID, "c0"))
}
