package retiring

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// chatter signals a message from sender every gap from first until last.
func chatter(t *testing.T, env interface {
	RegisterDelayedCallback(func(), time.Duration)
	SignalWorkflow(string, any)
}, first, last, gap time.Duration, message func(i int) pipeline.Inbound) int {
	t.Helper()
	n := 0
	for at := first; at <= last; at += gap {
		in := message(n)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalInbound, in) }, at)
		n++
	}
	return n
}

// The defect this bound fixes: in a gated chat with a message every 500 ms,
// every message re-armed the window, the gate was never asked, and the
// buffer held 600 messages after 5 minutes.
func TestSteadyChatterInAGatedChatIsAskedAtTheMaximumWait(t *testing.T) {
	env, p := newEnv(t, gated, answering(pipeline.GateResult{Forward: false, Reason: "chatter"}, nil))
	sent := chatter(t, env, time.Second, 5*time.Minute, 500*time.Millisecond, func(i int) pipeline.Inbound {
		return groupMessage(fmt.Sprintf("g%d", i), "alice", "lol")
	})
	mid := queryStateAt(t, env, 150*time.Second)
	run(t, env, nil)

	asked := 0
	for _, g := range p.gates {
		asked += len(g.Batch)
		assert.LessOrEqual(t, len(g.Batch), 11, "a batch holds at most the messages of one maximum wait")
	}
	assert.Equal(t, sent, asked, "every message reached the gate once")
	assert.GreaterOrEqual(t, len(p.gates), 55, "asked about every 5 s over 5 minutes")
	assert.LessOrEqual(t, mid.Counters.Observed, sent)
	assert.Empty(t, mid.Buffers)
}

func TestDebounceWindowFlushesAtTheMaximumWaitDespiteChatter(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Second), func(p *fakePlatform) { p.settings.DebounceMaxWait = pipeline.Duration(3 * time.Second) })
	chatter(t, env, time.Second, 20*time.Second, 500*time.Millisecond, func(i int) pipeline.Inbound {
		return inbound(fmt.Sprintf("m%d", i), "more")
	})
	run(t, env, nil)

	require.GreaterOrEqual(t, len(p.steps), 6, "a batch at least every 3 s, not one at the end")
	assert.Equal(t, 4*time.Second, p.steps[0].At, "the first window closes 3 s after its first message")
	for _, s := range p.steps {
		assert.LessOrEqual(t, strings.Count(s.Req.Text, "more"), 7, "no batch spans more than the maximum wait")
	}
}

func TestAWindowLongerThanTheMaximumWaitIsKeptWhole(t *testing.T) {
	env, p := newEnv(t, withDebounce(10*time.Second))
	signalAt(env, time.Second, inbound("m1", "a"))
	signalAt(env, 3*time.Second, inbound("m2", "b"))
	run(t, env, nil)

	require.Len(t, p.steps, 1)
	assert.Equal(t, 11*time.Second, p.steps[0].At, "it closes 10 s after its first message: not cut to the 5 s default maximum wait, nor re-armed past it")
}

func TestAFullGatedBatchIsAskedAtOnce(t *testing.T) {
	env, p := newEnv(t, gated, answering(pipeline.GateResult{Forward: false}, nil))
	for i := range maxBufferedMessages + 5 {
		signalAt(env, time.Second, groupMessage(fmt.Sprintf("g%d", i), "alice", "spam"))
	}
	run(t, env, nil)

	require.Len(t, p.gates, 2)
	assert.Len(t, p.gates[0].Batch, maxBufferedMessages, "the batch went to the gate as soon as it was full")
	assert.Len(t, p.gates[1].Batch, 5, "the rest waited for their own window")
}

func TestAWindowOfHugeMessagesFlushesAtItsByteBound(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Minute))
	big := strings.Repeat("x", pipeline.MaxTextBytes/2)
	for i := range 5 {
		signalAt(env, time.Second, inbound(fmt.Sprintf("m%d", i), big))
	}
	run(t, env, nil)

	require.GreaterOrEqual(t, len(p.steps), 2, "no window holds more than its byte bound")
	for _, s := range p.steps[:len(p.steps)-1] {
		assert.LessOrEqual(t, len(s.Req.Text), maxBufferedBytes+pipeline.MaxTextBytes)
	}
}

func TestManySendersOpenAtMostTheBoundOfWindows(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Minute))
	for i := range maxOpenBuffers + 3 {
		in := inbound(fmt.Sprintf("m%d", i), "hi")
		in.SenderID = fmt.Sprintf("user%d", i)
		signalAt(env, time.Second, in)
	}
	snap := queryStateAt(t, env, 2*time.Second)
	run(t, env, nil)

	assert.Len(t, snap.Buffers, maxOpenBuffers, "the oldest windows were flushed to make room")
	total := 0
	for _, s := range p.steps {
		total += strings.Count(s.Req.Text, "hi")
	}
	assert.Equal(t, maxOpenBuffers+3, total, "every message was answered")
}
