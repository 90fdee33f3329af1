package retiring

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/replyflow/replyflow/pipeline"
)

func groupMessage(id, sender, text string) pipeline.Inbound {
	in := inbound(id, text)
	in.ChatType, in.SenderID, in.SenderName = pipeline.ChatGroup, sender, sender
	return in
}

func mentioning(in pipeline.Inbound) pipeline.Inbound {
	in.MentionsBot = true
	return in
}

func TestGroupEngagementObservesThenEngagesAndStaysSticky(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, groupMessage("g0", "carol", "hello"))                  // the only human so far: the fallback engages
	signalAt(env, 5*time.Second, groupMessage("g1", "alice", "anyone up for lunch?")) // a second human: strict from now on
	signalAt(env, 6*time.Second, mentioning(groupMessage("g2", "bob", "@bot what's good nearby?")))
	signalAt(env, 10*time.Second, groupMessage("g3", "bob", "and cheap?"))    // bob's sticky credit
	signalAt(env, 20*time.Second, groupMessage("g4", "alice", "I'm in"))      // alice has none
	signalAt(env, 30*time.Second, groupMessage("g5", "bob", "ok thanks all")) // g3's reply granted a new one
	snap := queryStateAt(t, env, 25*time.Second)
	run(t, env, nil)

	texts := p.turnTexts()
	require.Len(t, texts, 4, "g1 and g4 are observed")
	assert.Equal(t, "hello", texts[0], "no nudge while one human is known")
	assert.True(t, strings.HasPrefix(texts[1], "## Recent context (not addressed to you, for awareness only)\n- alice: anyone up for lunch?\n\n## Current message(s) (addressed to you)\n@bot what's good nearby?"))
	assert.Contains(t, texts[1], pipeline.GroupNudge, "a group with several humans gets the nudge")
	assert.True(t, strings.HasPrefix(texts[2], "and cheap?"))
	assert.Contains(t, texts[3], "- alice: I'm in")
	assert.Empty(t, p.statesOf("g1"), "an observed message gets no reaction")
	assert.Equal(t, 2, snap.Counters.Observed)
	assert.Equal(t, "smart", snap.Activation)
}

// A channel where one person speaks is still a group when the platform
// counts its members: the lone speaker's unaddressed message is observed,
// not answered, and a mention is answered with the group nudge.
func TestMemberCountMakesALoneSpeakerInAChannelAGroup(t *testing.T) {
	env, p := newEnv(t)
	counted := func(in pipeline.Inbound, humans int) pipeline.Inbound {
		in.Membership = &pipeline.MembershipCount{Humans: humans, FetchedAt: testStart}
		return in
	}
	signalAt(env, time.Second, counted(groupMessage("g0", "carol", "hello"), 5))
	signalAt(env, 5*time.Second, counted(mentioning(groupMessage("g1", "carol", "@bot hi")), 5))
	snap := queryStateAt(t, env, 10*time.Second)
	run(t, env, nil)

	texts := p.turnTexts()
	require.Len(t, texts, 1, "g0 is observed: five people are here, carol did not address the bot")
	assert.Contains(t, texts[0], "- carol: hello")
	assert.Contains(t, texts[0], pipeline.GroupNudge)
	require.NotNil(t, snap.Membership)
	assert.Equal(t, 5, snap.Membership.Humans)
}

func TestDisengageToolDropsStickyEvenForTheSameTurnsReply(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			switch {
			case req.Step == 0 && strings.Contains(req.Text, "stop joining in"):
				return pipeline.TurnResult{Model: req.Model, ToolCalls: []pipeline.ToolCall{{ID: "d", Name: pipeline.DisengageTool, Arguments: "{}"}}}, nil
			case req.Step == 1:
				return pipeline.TurnResult{Reply: "ok, backing off", Model: req.Model}, nil
			}
			return pipeline.TurnResult{Reply: "hello", Model: req.Model}, nil
		}
	})
	signalAt(env, time.Second, groupMessage("g0", "carol", "hi all"))
	signalAt(env, 2*time.Second, groupMessage("g1", "alice", "hey"))
	signalAt(env, 3*time.Second, mentioning(groupMessage("g2", "bob", "@bot please stop joining in")))
	signalAt(env, 10*time.Second, groupMessage("g3", "bob", "thanks"))
	snap := queryStateAt(t, env, 20*time.Second)
	run(t, env, nil)

	assert.Equal(t, []string{"hello", "ok, backing off"}, p.replies(), "the ack went out")
	assert.Len(t, p.turnTexts(), 3, "carol's turn, then bob's in two steps; bob's thanks is observed")
	assert.NotContains(t, snap.Sticky, pipeline.StickyCredit{Author: "webchat:bob"})
	for _, c := range snap.Sticky {
		assert.NotEqual(t, "webchat:bob", c.Author, "the same turn's ack granted bob nothing")
	}
	assert.Equal(t, 2, snap.Counters.Observed)
}

func TestDisengageSignal(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, groupMessage("g0", "carol", "hi all"))
	signalAt(env, 2*time.Second, mentioning(groupMessage("g1", "bob", "@bot hi")))
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalDisengage, nil) }, 5*time.Second)
	signalAt(env, 10*time.Second, groupMessage("g2", "bob", "still there?"))
	run(t, env, nil)
	assert.Len(t, p.turnTexts(), 2, "after disengage, bob's plain follow-up is observed")
}

func TestDeniedSendersNeverReachTheModel(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) { p.settings.AllowFrom = []string{"webchat:alice"} })
	eve := inbound("e1", "hello?")
	eve.SenderID = "eve"
	signalAt(env, time.Second, eve)
	signalAt(env, 2*time.Second, inbound("a1", "hi"))
	snap := queryStateAt(t, env, 10*time.Second)
	run(t, env, nil)

	assert.Equal(t, []string{"hi"}, p.turnTexts())
	assert.Empty(t, p.statesOf("e1"))
	assert.Equal(t, 1, snap.Counters.Denied)
	assert.Equal(t, "e1", snap.LastDenied)
}

func TestPeerBotLoopGuardAddsItsNotice(t *testing.T) {
	env, p := newEnv(t)
	for i := range 5 {
		bot := mentioning(groupMessage("b"+string(rune('1'+i)), "otherbot", "@bot ping"))
		bot.SenderIsBot = true
		signalAt(env, time.Duration(i+1)*time.Second, bot)
	}
	run(t, env, nil)
	texts := p.turnTexts()
	require.Len(t, texts, 5, "peer bots are reachable by mention")
	assert.NotContains(t, texts[3], pipeline.LoopGuardNotice)
	assert.Contains(t, texts[4], pipeline.LoopGuardNotice, "the fifth peer-bot turn in a row trips the guard")
	assert.NotContains(t, texts[4], pipeline.GroupNudge, "one silence notice per turn")
}

func TestActivationIsOwnersOnly(t *testing.T) {
	env, p := newEnv(t)
	alice := groupMessage("c1", "alice", "/activation mention")
	boss := groupMessage("c2", "boss", "/activation mention")
	signalAt(env, time.Second, alice)
	signalAt(env, 2*time.Second, boss)
	signalAt(env, 3*time.Second, groupMessage("m1", "alice", "hello")) // solo human, but mention mode
	run(t, env, nil)

	assert.Equal(t, []string{"⚠️ Only owners may change the activation mode.", "Activation for this chat: mention."}, p.replies())
	assert.Empty(t, p.turnTexts())
	require.NotEmpty(t, p.saved)
	assert.Equal(t, "mention", p.saved[len(p.saved)-1].Activation)
}

func TestClaimCodeMakesTheFirstSenderAnOwner(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) { p.settings.AllowFrom = []string{"webchat:nobody"} })
	env.RegisterActivityWithOptions(func(_ context.Context, req pipeline.ClaimRequest) (bool, error) {
		return req.Code == "claim-0123456789ab" && req.Who == "webchat:alice", nil
	}, activity.RegisterOptions{Name: pipeline.ActivityClaim})
	signalAt(env, time.Second, inbound("c0", "hello"))                // denied: not allowed yet
	signalAt(env, 2*time.Second, inbound("c1", "claim-0123456789ab")) // claims
	signalAt(env, 3*time.Second, inbound("c2", "hello again"))        // an owner now passes the gate
	snap := queryStateAt(t, env, 10*time.Second)
	run(t, env, nil)

	assert.Equal(t, "You (webchat:alice) are now an owner of this agent.", p.replies()[0])
	assert.Equal(t, []string{"hello again"}, p.turnTexts())
	assert.Equal(t, 1, snap.Counters.Denied)
}
