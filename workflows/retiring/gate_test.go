package retiring

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

func gated(p *fakePlatform) {
	p.settings.Activation = pipeline.ActivationGated
	p.settings.GateModel = "openai/gate"
	p.settings.Queue.Debounce = pipeline.Duration(time.Second)
}

func answering(result pipeline.GateResult, err error) func(*fakePlatform) {
	return func(p *fakePlatform) {
		p.gate = func(pipeline.GateRequest) (pipeline.GateResult, error) { return result, err }
	}
}

func TestGateForwardFalseGivesNoTurn(t *testing.T) {
	env, p := newEnv(t, gated, answering(pipeline.GateResult{Forward: false, Reason: "chatter"}, nil))
	signalAt(env, time.Second, groupMessage("g1", "alice", "lol"))
	signalAt(env, 1500*time.Millisecond, groupMessage("g2", "alice", "same"))
	snap := queryStateAt(t, env, time.Minute)
	run(t, env, nil)

	require.Len(t, p.gates, 1, "the gate runs once on the debounced batch")
	assert.Len(t, p.gates[0].Batch, 2)
	assert.Empty(t, p.turnTexts())
	assert.Equal(t, 2, snap.Counters.Observed, "a skipped batch is kept as context")
}

func TestGateForwardTrueGivesExactlyOneTurnWithoutAnchor(t *testing.T) {
	env, p := newEnv(t, gated, func(p *fakePlatform) {
		p.gate = func(req pipeline.GateRequest) (pipeline.GateResult, error) {
			return pipeline.GateResult{Forward: strings.HasSuffix(req.Batch[0].Text, "?")}, nil
		}
	})
	signalAt(env, time.Second, groupMessage("g0", "bob", "morning"))
	signalAt(env, 5*time.Second, groupMessage("g1", "alice", "does anyone know how to reset a router?"))
	snap := queryStateAt(t, env, time.Minute)
	run(t, env, nil)

	require.Len(t, p.gates, 2)
	require.Len(t, p.steps, 1, "the forwarded batch is one turn; the other was skipped")
	assert.Equal(t, []string{"bob: morning"}, []string{p.gates[1].Context[0].SenderName + ": " + p.gates[1].Context[0].Text},
		"the gate sees the latest messages before the batch")
	for _, s := range p.sent {
		assert.Empty(t, s.ReplyTo, "a gate-forwarded reply anchors no message")
	}
	assert.Equal(t, 1, snap.Counters.Gated)
	assert.Contains(t, p.steps[0].Req.Text, "- bob: morning", "the turn sees the latest messages too")
}

func TestGateFailuresSkip(t *testing.T) {
	failures := map[string]error{
		"error":   errors.New("boom"),
		"timeout": temporal.NewTimeoutError(0, nil),
		"invalid": temporal.NewNonRetryableApplicationError("not strict JSON", pipeline.ErrFormat, nil),
	}
	for name, err := range failures {
		t.Run(name, func(t *testing.T) {
			env, p := newEnv(t, gated, answering(pipeline.GateResult{}, err))
			signalAt(env, time.Second, groupMessage("g1", "alice", "hello?"))
			run(t, env, nil)
			assert.Len(t, p.gates, 1)
			assert.Empty(t, p.steps, "a failed gate never starts a turn")
		})
	}
}

func TestGateIsNeverAskedForDMsOrTriggers(t *testing.T) {
	env, p := newEnv(t, gated, answering(pipeline.GateResult{Forward: false}, nil))
	signalAt(env, time.Second, inbound("d1", "a direct message"))
	signalAt(env, 5*time.Second, groupMessage("g1", "alice", "chatter"))
	signalAt(env, 5500*time.Millisecond, mentioning(groupMessage("g2", "alice", "@bot help")))
	run(t, env, nil)

	assert.Empty(t, p.gates, "DMs are never gated; a mention bypasses the gate and discards the pending batch")
	require.Len(t, p.steps, 2)
	assert.Contains(t, p.steps[1].Req.Text, "- alice: chatter", "the discarded batch is kept as context")
	assert.Equal(t, "g2", p.sent[1].ReplyTo, "a triggered turn anchors its trigger")
}

func TestNoGateWhileATurnRunsButAReplyToTheBotForks(t *testing.T) {
	env, p := newEnv(t, gated, withSlowModel(10*time.Second))
	signalAt(env, time.Second, mentioning(groupMessage("g1", "alice", "@bot long question"))) // runs 1-11 s, sends bot-1
	signalAt(env, 20*time.Second, mentioning(groupMessage("g2", "alice", "@bot one more")))   // runs 20-30 s
	signalAt(env, 21*time.Second, groupMessage("g3", "bob", "meanwhile, chatter"))
	reply := groupMessage("g4", "carol", "re: your answer")
	reply.ReplyTo = "bot-1"
	signalAt(env, 22*time.Second, reply)
	run(t, env, nil)

	assert.Empty(t, p.gates, "no gate is evaluated while a turn runs")
	texts := p.turnTexts()
	require.Len(t, texts, 3, "the reply to the bot forks a turn queued behind the running one")
	assert.Contains(t, texts[2], "- bob: meanwhile, chatter")
	assert.Contains(t, texts[2], "re: your answer")
}
