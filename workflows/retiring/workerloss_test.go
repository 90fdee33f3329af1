package retiring

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

// losingWorkers is an agent whose first n attempts lose their worker (a
// heartbeat timeout, as the server reports a killed worker's activity),
// then answers.
func losingWorkers(n int) func(*fakePlatform) {
	return func(p *fakePlatform) {
		lost := 0
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			if lost < n {
				lost++
				return pipeline.TurnResult{}, temporal.NewHeartbeatTimeoutError()
			}
			return pipeline.TurnResult{Reply: "the answer", Model: req.Model}, nil
		}
	}
}

// Workers killed under a turn more times than it has rounds
// (TurnAttempts is 2 here): the same model is asked again each time and
// the turn answers, with no failure notice and no fallback recorded.
func TestATurnOutlivesMoreLostWorkersThanItHasRounds(t *testing.T) {
	env, p := newEnv(t, losingWorkers(4))
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, 5*time.Minute)
	run(t, env, nil)

	require.Len(t, p.steps, 5, "four lost attempts, then the answer")
	for _, step := range p.steps {
		assert.Equal(t, p.settings.Models[0], step.Req.Model, "a lost worker is no reason to change models")
	}
	require.Len(t, p.sent, 1)
	assert.Equal(t, "the answer", p.sent[0].Text)
	require.NotNil(t, snap)
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, "answered", snap.LastTurn.Outcome)
	assert.Empty(t, snap.LastTurn.Fallback)
}

// A step that loses its worker every time still ends: past
// maxWorkerLosses a loss counts as the model's Timeout, and the turn's
// rounds run out as before.
func TestAStepThatKeepsLosingItsWorkerEnds(t *testing.T) {
	env, p := newEnv(t, losingWorkers(1000))
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	rounds := p.settings.TurnAttempts
	assert.Len(t, p.steps, maxWorkerLosses+rounds, "the losses a step may have, then one Timeout a round")
	require.Len(t, p.sent, 1)
	assert.True(t, strings.Contains(p.sent[0].Text, "Timeout"), "the user is told: %q", p.sent[0].Text)
}

// Runs from before the change count a lost worker as the model's
// Timeout, as they did.
func TestRunsBeforeTheChangeCountALostWorkerAsATimeout(t *testing.T) {
	env, p := newEnv(t, losingWorkers(1000))
	runsFromBefore(env, changeStream)
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	assert.Len(t, p.steps, p.settings.TurnAttempts)
}
