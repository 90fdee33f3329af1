package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestDebounceWindowIsRearmedByEachMessage(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Second))
	signalAt(env, time.Second, inbound("m1", "a"))
	signalAt(env, 1500*time.Millisecond, inbound("m2", "b"))
	signalAt(env, 2200*time.Millisecond, inbound("m3", "c"))
	during := queryStateAt(t, env, 2500*time.Millisecond)
	run(t, env, nil)

	require.Len(t, p.steps, 1, "a burst is one turn")
	assert.Equal(t, "a\nb\nc", p.steps[0].Req.Text, "joined by newlines, in order")
	assert.Equal(t, 3200*time.Millisecond, p.steps[0].At, "the window closes 1 s after the last message")
	assert.Equal(t, "m3", p.sent[0].ReplyTo, "the reply anchors the last message")
	for _, id := range []string{"m1", "m2", "m3"} {
		assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf(id), id)
	}
	assert.Equal(t, StatusDebouncing, during.Status)
	require.Len(t, during.Buffers, 1)
	assert.Equal(t, []string{"m1", "m2", "m3"}, during.Buffers[0].MessageIDs)
}

func TestDebounceNeverMergesAcrossThreadsOrSenders(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Second))
	inThread := inbound("m2", "in thread")
	inThread.ThreadID = "t1"
	fromBob := inbound("m3", "from bob")
	fromBob.SenderID = "bob"
	signalAt(env, time.Second, inbound("m1", "root"))
	signalAt(env, 1100*time.Millisecond, inThread)
	signalAt(env, 1200*time.Millisecond, fromBob)
	run(t, env, nil)

	assert.ElementsMatch(t, []string{"root", "in thread", "from bob"}, p.turnTexts())
	for _, s := range p.sent {
		if s.ReplyTo == "m2" {
			assert.Equal(t, "t1", s.ThreadID, "the reply stays in its thread")
		}
	}
}

func TestCommandSkipsTheWindowAfterFlushingItsKey(t *testing.T) {
	env, p := newEnv(t, withDebounce(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "pending text"))
	signalAt(env, 2*time.Second, inbound("c1", "/status"))
	run(t, env, nil)

	require.Len(t, p.steps, 1)
	assert.Equal(t, 2*time.Second, p.steps[0].At, "the command flushed m1's window at once")
	require.Len(t, p.sent, 2)
	var status string
	for _, s := range p.sent {
		if s.ReplyTo == "c1" {
			status = s.Text
		}
	}
	assert.Contains(t, status, "Session session:webchat:demo")
	assert.Equal(t, 1, len(p.steps), "the command never reaches the model")
}

func TestMediaSkipsTheWindow(t *testing.T) {
	env, p := newEnv(t, withDebounce(5*time.Second))
	photo := inbound("m2", "look")
	photo.Media = []pipeline.Media{{Kind: "photo", Ref: "file-1"}}
	signalAt(env, time.Second, inbound("m1", "text first"))
	signalAt(env, 2*time.Second, photo)
	run(t, env, nil)

	assert.Equal(t, []string{"text first", "look\n[photo attached, ref file-1]"}, p.turnTexts(),
		"the text is flushed first, then the photo is its own turn, which names the attachment for the model")
	assert.Equal(t, 2*time.Second, p.steps[0].At)
}
