package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

const primary, secondary = "openai/primary", "anthropic/secondary"

// modelFailure makes the primary fail with errType (the first `times`
// calls; 0 means always) and the secondary answer.
func modelFailure(errType string, times int) func(*fakePlatform) {
	return func(p *fakePlatform) {
		p.settings.Models = []string{primary, secondary}
		calls := 0
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			if req.Model == primary && (times == 0 || calls < times) {
				calls++
				return pipeline.TurnResult{}, temporal.NewApplicationErrorWithOptions("scripted", errType,
					temporal.ApplicationErrorOptions{NonRetryable: !pipeline.Transient(errType)})
			}
			return pipeline.TurnResult{Reply: "answer from " + req.Model, Model: req.Model}, nil
		}
	}
}

func (p *fakePlatform) modelsAsked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range p.steps {
		out = append(out, s.Req.Model)
	}
	return out
}

func TestFallbackMatrix(t *testing.T) {
	cases := []struct {
		errType  string
		asked    []string
		replies  []string
		outcome  string
		cooldown bool
	}{
		{pipeline.ErrRateLimited, []string{primary, secondary}, []string{"answer from " + secondary}, "answered", true},
		{pipeline.ErrOverloaded, []string{primary, secondary}, []string{"answer from " + secondary}, "answered", true},
		{pipeline.ErrTimeout, []string{primary, secondary}, []string{"answer from " + secondary}, "answered", false},
		{pipeline.ErrAuth, []string{primary, secondary}, []string{"answer from " + secondary}, "answered", false},
		{pipeline.ErrBilling, []string{primary, secondary}, []string{"answer from " + secondary}, "answered", false},
		{pipeline.ErrModelNotFound, []string{primary, secondary}, []string{"answer from " + secondary}, "answered", false},
		{pipeline.ErrFormat, []string{primary}, []string{pipeline.ReplyFormatError}, "failed", false},
		{pipeline.ErrContentFilter, []string{primary}, []string{pipeline.ReplyContentFilter}, "failed", false},
		{pipeline.ErrContextOverflow, []string{primary, primary}, []string{pipeline.ReplyContextReset, "answer from " + primary}, "answered", false},
	}
	for _, c := range cases {
		t.Run(c.errType, func(t *testing.T) {
			env, p := newEnv(t, modelFailure(c.errType, 1))
			signalAt(env, time.Second, inbound("m1", "hi"))
			snap := queryStateAt(t, env, 10*time.Second)
			run(t, env, nil)

			assert.Equal(t, c.asked, p.modelsAsked())
			assert.ElementsMatch(t, c.replies, p.replies())
			assert.Equal(t, c.outcome, snap.LastTurn.Outcome)
			assert.Equal(t, c.cooldown, len(snap.Cooldowns) == 1, "cooldowns: %+v", snap.Cooldowns)
			if c.outcome == "answered" && c.asked[len(c.asked)-1] == secondary {
				assert.Equal(t, []string{primary + ": " + c.errType}, snap.LastTurn.Fallback, "the state says why")
			}
			if c.errType == pipeline.ErrContextOverflow {
				assert.Equal(t, 1, snap.Counters.Resets, "a new transcript")
			}
		})
	}
}

func TestCooldownSkipsARateLimitedModelAcrossTurns(t *testing.T) {
	env, p := newEnv(t, modelFailure(pipeline.ErrRateLimited, 2))
	signalAt(env, time.Second, inbound("m1", "one"))      // primary limited: cools 30 s
	signalAt(env, 10*time.Second, inbound("m2", "two"))   // skipped while cooling
	signalAt(env, 40*time.Second, inbound("m3", "three")) // tried again: limited again, cools 1 min
	signalAt(env, 90*time.Second, inbound("m4", "four"))  // still cooling (until 100 s)
	signalAt(env, 2*time.Minute, inbound("m5", "five"))   // answers; cooldown forgotten
	status := queryStateAt(t, env, 95*time.Second)
	after := queryStateAt(t, env, 3*time.Minute)
	run(t, env, nil)

	assert.Equal(t, []string{primary, secondary, secondary, primary, secondary, secondary, primary}, p.modelsAsked())
	require.Len(t, status.Cooldowns, 1)
	assert.Equal(t, 2, status.Cooldowns[0].Level)
	assert.Equal(t, testStart.Add(40*time.Second+time.Minute), status.Cooldowns[0].Until)
	assert.Empty(t, after.Cooldowns)
}

func TestAllModelsLimitedWaitsForTheFirstCooldown(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.Models = []string{primary, secondary}
		calls := 0
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			calls++
			if calls <= 2 {
				return pipeline.TurnResult{}, temporal.NewApplicationError("busy", pipeline.ErrRateLimited)
			}
			return pipeline.TurnResult{Reply: "finally", Model: req.Model}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	assert.Equal(t, []string{primary, secondary, primary}, p.modelsAsked())
	assert.Equal(t, 31*time.Second, p.steps[2].At, "round two starts when the first cooldown ends")
	assert.Equal(t, []string{"finally"}, p.replies())
}

func TestChosenModelIsStrict(t *testing.T) {
	env, p := newEnv(t, modelFailure(pipeline.ErrAuth, 0))
	signalAt(env, time.Second, inbound("c1", "/model "+primary))
	signalAt(env, 2*time.Second, inbound("m1", "hi"))
	signalAt(env, time.Minute, inbound("c2", "/model default"))
	signalAt(env, 2*time.Minute, inbound("m2", "again"))
	run(t, env, nil)

	assert.Equal(t, []string{primary, primary, secondary}, p.modelsAsked(),
		"no fallback while a model is chosen; the chain again after /model default")
	replies := p.replies()
	require.Len(t, replies, 4)
	assert.Contains(t, replies[1], pipeline.ReplyNoModel(pipeline.ErrAuth))
}
