package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestATurnRunsWithTheChatsSettingsUnderItsOwnDirectives(t *testing.T) {
	high, on, full, model := pipeline.ThinkHigh, true, pipeline.UsageFull, "x/y"
	c := ControlState{Muted: true, UsageMode: pipeline.UsageTokens}
	c.Apply(pipeline.Directives{Think: ptr(pipeline.ThinkLow)})

	assert.Equal(t, TurnOptions{Think: pipeline.ThinkLow, Usage: pipeline.UsageTokens, Muted: true, ThinkNote: true}, c.TurnOptions(nil),
		"the turn after /think changed says when its model takes no effort")
	assert.Equal(t, TurnOptions{Think: pipeline.ThinkLow, Usage: pipeline.UsageTokens, Muted: true}, c.TurnOptions(nil), "once")
	assert.Equal(t, TurnOptions{Think: high, Verbose: true, Usage: full, Model: model, Muted: true, ThinkNote: true},
		c.TurnOptions(&pipeline.Directives{Think: &high, Verbose: &on, Usage: &full, Model: &model}))
	assert.Equal(t, pipeline.ThinkLow, c.Think, "a turn's directives leave the chat's settings alone")

	c.Apply(pipeline.Directives{Think: ptr(pipeline.ThinkOff)})
	assert.False(t, c.TurnOptions(nil).ThinkNote, "turning thinking off needs no note")
}

func ptr[T any](v T) *T { return &v }

func TestTheChatsSettingsAreSavedAndRestored(t *testing.T) {
	c := ControlState{Think: pipeline.ThinkMedium, Verbose: true, UsageMode: pipeline.UsageFull, Muted: true}
	saved := c.Saved(pipeline.SessionSettings{ModelOverride: "x/y", Activation: "always"})
	assert.Equal(t, pipeline.SessionSettings{ModelOverride: "x/y", Activation: "always",
		Think: pipeline.ThinkMedium, Verbose: true, Usage: pipeline.UsageFull, Muted: true}, saved)

	var restored ControlState
	restored.Restore(saved)
	assert.Equal(t, c, restored)
}

func TestUsageAddsUp(t *testing.T) {
	var c ControlState
	c.AddUsage(&pipeline.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5, HasCost: true})
	c.AddUsage(nil)
	c.AddUsage(&pipeline.Usage{InputTokens: 5, OutputTokens: 1, CostUSD: 0.25, HasCost: true})
	assert.Equal(t, pipeline.Usage{InputTokens: 15, OutputTokens: 3, CostUSD: 0.75, HasCost: true}, c.UsageTotal)
}

// The idle TTL counts from when the session went idle after what a
// person did, so heartbeat turns keep no session alive.
func TestTheIdleTTLCountsFromWhatAPersonDidLast(t *testing.T) {
	env := envAt(0)
	env.Settings.IdleTTL = pipeline.Duration(time.Hour)
	var started ControlState
	assert.Zero(t, started.IdleLeft(env), "a session no person started ends once its tick is answered")

	var c ControlState
	c.Touched()
	assert.Equal(t, time.Hour, c.IdleLeft(env))
	later := env
	later.Now = env.Now.Add(40 * time.Minute)
	assert.Equal(t, 20*time.Minute, c.IdleLeft(later), "a heartbeat turn meanwhile does not move it")
	c.Touched()
	assert.Equal(t, time.Hour, c.IdleLeft(later))
}

func TestAHeartbeatTickRunsOnceAndItsOutcomeIsShown(t *testing.T) {
	env := envAt(0)
	var c ControlState
	assert.Empty(t, c.HeartbeatLine(), "no line before the first tick")
	tick := pipeline.HeartbeatTick{ID: "t1", ScheduledAt: t0.Add(-time.Second)}
	out, fresh := c.NewTick(env, tick)
	require.True(t, fresh)
	assert.Equal(t, []Effect{Publish{}}, out)
	_, fresh = c.NewTick(env, tick)
	assert.False(t, fresh, "a tick signalled twice runs once")

	assert.Empty(t, c.HeartbeatDone(env, "t0", HeartbeatFailed, ""), "an older tick changes nothing")
	assert.Equal(t, []Effect{Publish{}}, c.HeartbeatDone(env, "t1", HeartbeatDelivered, "turn-3"))
	assert.Equal(t, &HeartbeatRecord{TickID: "t1", ScheduledAt: tick.ScheduledAt, At: t0, Outcome: HeartbeatDelivered, TurnID: "turn-3"}, c.LastHeartbeat)
	assert.Equal(t, "2026-11-26 12:00 UTC: reported in the chat", c.HeartbeatLine())

	for i := range heartbeatTicksKept + 5 {
		c.NewTick(env, pipeline.HeartbeatTick{ID: fmt.Sprint("n", i)})
	}
	assert.Len(t, c.HeartbeatTicks, heartbeatTicksKept)
	assert.Equal(t, "n5", c.HeartbeatTicks[0], "the oldest are forgotten")
}
