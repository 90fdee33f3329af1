package retiring

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// busySession sends m1 at 1 s (its turn takes 5 s), then a, b, c... at
// 2 s, 3 s, 4 s while it runs.
func busySession(t *testing.T, mode pipeline.QueueMode, texts []string, options ...func(*fakePlatform)) *fakePlatform {
	env, p := newEnv(t, append([]func(*fakePlatform){withQueue(mode), withSlowModel(5 * time.Second)}, options...)...)
	signalAt(env, time.Second, inbound("m1", "first"))
	for i, text := range texts {
		signalAt(env, time.Duration(i+2)*time.Second, inbound("q"+text, text))
	}
	run(t, env, nil)
	return p
}

func TestFollowupRunsOneTurnPerQueuedMessageInOrder(t *testing.T) {
	p := busySession(t, pipeline.QueueFollowup, []string{"a", "b", "c"})
	assert.Equal(t, []string{"first", "a", "b", "c"}, p.turnTexts())
	assert.Equal(t, []string{"echo first", "echo a", "echo b", "echo c"}, p.replies())
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("qa"),
		"a queued message shows 👀 while it waits")
}

func TestCollectRunsOneTurnForEverythingQueued(t *testing.T) {
	p := busySession(t, pipeline.QueueCollect, []string{"a", "b", "c"})
	require.Equal(t, 2, len(p.steps))
	assert.Equal(t, "[Queued messages while agent was busy]\n\n---\nQueued #1\na\n\n---\nQueued #2\nb\n\n---\nQueued #3\nc", p.steps[1].Req.Text)
	assert.Equal(t, "qc", p.sent[1].ReplyTo)
}

// continueOnce makes the first model step of the first turn call a tool,
// so a second step follows.
func continueOnce(p *fakePlatform) {
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		r := pipeline.TurnResult{Reply: "echo " + req.Text, Model: "demo/echo"}
		if len(p.steps) == 1 {
			r.ToolCalls = []pipeline.ToolCall{{ID: "c1", Name: "lookup", Arguments: "{}"}}
		}
		return r, nil
	}
}

func TestSteerInjectsAtTheNextModelStep(t *testing.T) {
	p := busySession(t, pipeline.QueueSteer, []string{"a"}, continueOnce)
	require.Len(t, p.steps, 2, "one turn, two steps")
	assert.Equal(t, p.steps[0].Req.TurnID, p.steps[1].Req.TurnID)
	assert.Equal(t, "first\n\n"+pipeline.SteerHeader+"\na", p.steps[1].Req.Text)
	assert.Equal(t, []string{"qa"}, p.steps[1].Req.ThinkingOn, "the steered message shows ✍️ from its step on")
	assert.Len(t, p.sent, 1)
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("qa"))
}

func TestSteerFallsBackToFollowupWhenNoStepComes(t *testing.T) {
	p := busySession(t, pipeline.QueueSteer, []string{"a"})
	assert.Equal(t, []string{"first", "a"}, p.turnTexts(), "the turn ended without another step, so a got its own turn")
}

func TestSteerBacklogInjectsAndQueues(t *testing.T) {
	p := busySession(t, pipeline.QueueSteerBacklog, []string{"a"}, continueOnce)
	assert.Equal(t, []string{"first", "first\n\n" + pipeline.SteerHeader + "\na", "a"}, p.turnTexts())
}

func TestInterruptCancelsTheRunningTurn(t *testing.T) {
	env, p := newEnv(t, withQueue(pipeline.QueueInterrupt), withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "first"))
	signalAt(env, 2*time.Second, inbound("m2", "never mind, this"))
	snap := queryStateAt(t, env, 3*time.Second)
	run(t, env, nil)

	assert.Equal(t, []string{"echo never mind, this"}, p.replies(), "only the new message is answered")
	require.Len(t, p.steps, 2)
	assert.Equal(t, 7*time.Second, p.steps[1].At, "the new turn started at once (2 s) and took its 5 s")
	assert.Equal(t, 1, snap.Counters.Interrupted)
	at, ok := p.clearedAt("m1")
	require.True(t, ok, "the interrupted message's reaction is cleared too")
	assert.Equal(t, 2*time.Second, at, "at once: the cancelled attempt takes back its own ✍️")
}

func TestQueueCapDropPolicies(t *testing.T) {
	withCap := func(drop pipeline.DropPolicy) func(*fakePlatform) {
		return func(p *fakePlatform) { p.settings.Queue.Cap, p.settings.Queue.Drop = 2, drop }
	}
	t.Run("old", func(t *testing.T) {
		p := busySession(t, pipeline.QueueFollowup, []string{"a", "b", "c"}, withCap(pipeline.DropOld))
		assert.Equal(t, []string{"first", "b", "c"}, p.turnTexts())
		assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionNone}, p.statesOf("qa"),
			"a dropped message's 👀 is cleared")
	})
	t.Run("new", func(t *testing.T) {
		p := busySession(t, pipeline.QueueFollowup, []string{"a", "b", "c"}, withCap(pipeline.DropNew))
		assert.Equal(t, []string{"first", "a", "b"}, p.turnTexts())
		assert.Empty(t, p.statesOf("qc"), "dropped on arrival, its 👀 was never sent, so nothing needs clearing")
	})
	t.Run("summarize", func(t *testing.T) {
		long := strings.Repeat("word ", 60)
		p := busySession(t, pipeline.QueueFollowup, []string{long, "b", "c"}, withCap(pipeline.DropSummarize))
		texts := p.turnTexts()
		require.Len(t, texts, 3)
		summary := pipeline.SummaryLine("alice", long)
		assert.Equal(t, "[Queue overflow] Dropped 1 message(s) due to cap.\n- "+summary+"\n\nb", texts[1])
		assert.Equal(t, "c", texts[2], "the queued messages keep their own text")
		assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionDone, pipeline.ReactionNone},
			p.statesOf("q"+long), "the summarized message follows the turn that mentions it")
	})
}

func TestQueueDirective(t *testing.T) {
	env, p := newEnv(t, withMembersOpen(), withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("d1", "/queue collect cap:5"))
	signalAt(env, 2*time.Second, inbound("m1", "first"))
	signalAt(env, 3*time.Second, inbound("m2", "a"))
	signalAt(env, 4*time.Second, inbound("m3", "b"))
	signalAt(env, 5*time.Second, inbound("m4", "/queue followup c"))
	snap := queryStateAt(t, env, 30*time.Second)
	run(t, env, nil)

	assert.Equal(t, "Queue settings for this chat: collect, debounce 0s, cap 5, drop summarize.", p.sent[0].Text)
	assert.Equal(t, pipeline.QueueCollect, snap.Queue.Mode, "a directive alone sets the session's mode")
	assert.Equal(t, 5, snap.Queue.Cap)
	texts := p.turnTexts()
	require.Len(t, texts, 3, "collect takes the two queued batches; the followup one runs alone")
	assert.Equal(t, "[Queued messages while agent was busy]\n\n---\nQueued #1\na\n\n---\nQueued #2\nb", texts[1])
	assert.Equal(t, "c", texts[2], "the directive is stripped from a mixed message")
}

func TestBadDirectiveIsAnsweredNotSentToTheModel(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("d1", "/queue sideways"))
	run(t, env, nil)
	assert.Empty(t, p.steps)
	require.Len(t, p.sent, 1)
	assert.Contains(t, p.sent[0].Text, `unknown queue mode "sideways"`)
}
