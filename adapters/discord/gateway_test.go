package discord

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func byID(list []pipeline.Inbound) map[string]pipeline.Inbound {
	out := map[string]pipeline.Inbound{}
	for _, in := range list {
		out[in.MessageID] = in
	}
	return out
}

// inOrder says whether ids appear in list in this order.
func inOrder(list []string, ids ...string) bool {
	last := -1
	for _, id := range ids {
		i := slices.Index(list, id)
		if i <= last {
			return false
		}
		last = i
	}
	return true
}

func TestGatewayHandsMessagesToTheirSessions(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	id := s.fake.Identifies()
	require.Len(t, id, 1)
	assert.True(t, id[0].MessageContent)
	assert.Equal(t, uint64(Intents), id[0].Intents)

	bot := s.fake.BotID
	own := s.fake.Post(discordtest.Post{Channel: general, Author: bot, Content: "I am the bot"})
	mention := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "<@" + bot + "> hello"})
	inThread := s.fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "in the thread"})
	dm := s.fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "psst"})
	peer := s.fake.Post(discordtest.Post{Channel: general, Author: peerBot, Content: "beep"})
	reply := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "thanks", ReplyTo: own.ID})
	file := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Attachments: []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png", Size: 3}}})
	got := byID(s.sink.waitAccepted(t, mention.ID, inThread.ID, dm.ID, peer.ID, reply.ID, file.ID))

	assert.NotContains(t, s.sink.acceptedIDs(), own.ID, "the bot's own message is skipped")
	assert.True(t, inOrder(s.sink.acceptedIDs(), mention.ID, peer.ID, reply.ID, file.ID), "a channel's messages in order: %v", s.sink.acceptedIDs())
	members := &pipeline.MembershipCount{Humans: 2, Truncated: true}
	for _, in := range got {
		assert.Equal(t, pipeline.SessionKey{Channel: "discord", Account: bot, Chat: map[bool]string{true: dmID, false: general}[in.ChatID == dmID]}, in.Session())
		if in.ChatType == pipeline.ChatGroup {
			require.NotNil(t, in.Membership, in.MessageID)
			assert.Equal(t, members.Humans, in.Membership.Humans)
			assert.True(t, in.Membership.Truncated)
		} else {
			assert.Nil(t, in.Membership, "a DM carries no count")
		}
	}
	assert.True(t, got[mention.ID].MentionsBot)
	assert.Equal(t, "hello", got[mention.ID].Text)
	assert.Equal(t, thread, got[inThread.ID].ThreadID)
	assert.Equal(t, general, got[inThread.ID].ChatID)
	assert.Equal(t, pipeline.ChatDirect, got[dm.ID].ChatType)
	assert.True(t, got[peer.ID].SenderIsBot)
	assert.True(t, got[reply.ID].ReplyToBot)
	assert.Equal(t, own.ID, got[reply.ID].ReplyTo)
	require.Len(t, got[file.ID].Media, 1)
	assert.Equal(t, pipeline.Media{Kind: "photo", Ref: file.Attachments[0].URL(general), MimeType: "image/png", Name: "cat.png"}, got[file.ID].Media[0])
	assert.Len(t, s.fake.Calls(discordtest.RouteGuild), 1, "the member count is asked once a minute per guild")
}

func TestGatewayTurnsReactionsOnTheBotsMessagesIntoFeedback(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	own := s.fake.Post(discordtest.Post{Channel: thread, Author: s.fake.BotID, Content: "an answer"})
	theirs := s.fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "a question"})
	s.fake.React(thread, own.ID, ada, "👍")
	s.fake.React(thread, theirs.ID, peerBot, "👍")      // not the bot's message
	s.fake.React(thread, theirs.ID, s.fake.BotID, "👀") // the bot's own reaction
	s.fake.React(thread, own.ID, ada, "party:55")
	// A message after the reactions, in their channel's lane: once it is
	// accepted, every reaction before it was handled.
	marker := s.fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "done"})
	s.sink.waitAccepted(t, theirs.ID, marker.ID)
	_, _, feedback := s.sink.snapshot()
	require.Len(t, feedback, 2)
	assert.Equal(t, pipeline.Feedback{Channel: Channel, Account: s.fake.BotID, ChatID: general, EventID: "rx-" + own.ID + "-" + ada + "-1f44d",
		MessageID: own.ID, SenderID: ada, Emoji: []string{"👍"}, At: feedback[0].At}, feedback[0])
	assert.Equal(t, []string{"party:55"}, feedback[1].Emoji)
}

func TestButtonPressIsAnsweredOnlyAfterTheSinkAcceptedIt(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	proposal := s.fake.Post(discordtest.Post{Channel: thread, Author: s.fake.BotID, Content: "run it?"})

	hold := make(chan struct{})
	s.sink.set(func(k *sink) { k.hold = hold })
	pressed := s.fake.Press(discordtest.Press{Channel: thread, Message: proposal.ID, User: ada, CustomID: "approve:p1"})
	s.sink.waitFor(t, "the press reaches the sink", func() bool {
		calls, _, _ := s.sink.snapshot()
		return slices.ContainsFunc(calls, func(in pipeline.Inbound) bool { return in.MessageID == pressed.ID })
	})
	assert.Empty(t, s.fake.Responses(pressed.ID), "no answer while the sink has not accepted")
	close(hold)
	waitFake(t, s.fake, "the deferred update", func() bool { return len(s.fake.Responses(pressed.ID)) == 1 })
	assert.Equal(t, 6, s.fake.Responses(pressed.ID)[0].Type)
	in := byID(s.sink.waitAccepted(t, pressed.ID))[pressed.ID]
	assert.Equal(t, pipeline.Inbound{Channel: Channel, Account: s.fake.BotID, ChatID: general, ChatType: pipeline.ChatGroup,
		MessageID: pressed.ID, SenderID: ada, SenderName: "ada", ReplyTo: proposal.ID, ReplyToBot: true, Action: "approve:p1",
		ReplyToken: pressed.Token, ThreadID: thread, ReceivedAt: in.ReceivedAt}, in)

	// A sink that refuses: the press stays unanswered, so the presser
	// sees it fail and presses again.
	s.sink.set(func(k *sink) {
		k.hold = nil
		k.fail = func(in pipeline.Inbound) error { return assert.AnError }
	})
	refused := s.fake.Press(discordtest.Press{Channel: thread, Message: proposal.ID, User: ada, CustomID: "approve:p1"})
	s.logs.waitFor(t, "button press not accepted in time", "interaction="+refused.ID)
	assert.Empty(t, s.fake.Responses(refused.ID))
	// A sink slower than Discord's 3 s: unanswered too.
	slow := make(chan struct{})
	defer close(slow)
	s.sink.set(func(k *sink) { k.fail, k.hold = nil, slow })
	late := s.fake.Press(discordtest.Press{Channel: thread, Message: proposal.ID, User: ada, CustomID: "approve:p1"})
	line := s.logs.waitFor(t, "button press not accepted in time", "interaction="+late.ID)
	assert.Contains(t, line, "deadline exceeded")
	assert.Empty(t, s.fake.Responses(late.ID))
	s.sink.set(func(k *sink) { k.hold = nil })
	again := s.fake.Press(discordtest.Press{Channel: thread, Message: proposal.ID, User: ada, CustomID: "approve:p1"})
	waitFake(t, s.fake, "the press again is answered", func() bool { return len(s.fake.Responses(again.ID)) == 1 })
}

func TestSinkFailuresAreRetriedInOrderWithoutHoldingUpOtherChannels(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	refusals := 3
	s.sink.set(func(k *sink) {
		k.fail = func(in pipeline.Inbound) error {
			if in.ChatID == general && refusals > 0 {
				refusals--
				return assert.AnError
			}
			return nil
		}
	})
	r := s.run(t)
	s.connected(t, r)
	first := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "one"})
	second := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "two"})
	dm := s.fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "meanwhile"})
	third := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "three"})
	s.sink.waitAccepted(t, first.ID, second.ID, third.ID, dm.ID)
	ids := s.sink.acceptedIDs()
	assert.Equal(t, []string{dm.ID, first.ID, second.ID, third.ID}, ids, "the DM went ahead; general kept its order")
	calls, _, _ := s.sink.snapshot()
	tries := 0
	for _, c := range calls {
		if c.MessageID == first.ID {
			tries++
		}
	}
	assert.Equal(t, 4, tries)
	assert.Len(t, s.logs.with("not accepted; trying again", "message="+first.ID), 3, "each failure is logged")
}

func TestAFullQueueLeavesItsMessagesToTheHistoryInOrder(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	s.tune.laneCapacity = 2
	s.tune.enqueueWait = 20 * time.Millisecond
	r := s.run(t)
	s.connected(t, r)
	hold := make(chan struct{})
	s.sink.set(func(k *sink) { k.hold = hold })
	var posted []string
	for i := range 8 {
		posted = append(posted, s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "message " + string(rune('a'+i))}).ID)
	}
	s.logs.waitFor(t, "queue is full")
	close(hold)
	s.sink.waitAccepted(t, posted...)
	assert.Equal(t, posted, s.sink.acceptedIDs(), "every message once, in order")
}

func TestAMessageTheSinkDoesNotTakeInTimeIsFetchedAgainUntilItDoes(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	s.tune.acceptDeadline = 150 * time.Millisecond
	down := true
	s.sink.set(func(k *sink) {
		k.fail = func(pipeline.Inbound) error {
			if down {
				return assert.AnError
			}
			return nil
		}
	})
	r := s.run(t)
	s.connected(t, r)
	var posted []string
	for _, text := range []string{"one", "two", "three"} {
		posted = append(posted, s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: text}).ID)
	}
	s.logs.waitFor(t, "not accepted in time; its channel's history is fetched again")
	s.logs.waitFor(t, "history not handed on yet; trying again")
	s.sink.set(func(*sink) { down = false })
	s.sink.waitAccepted(t, posted...)
	assert.Equal(t, posted, s.sink.acceptedIDs(), "every message once, in order")
}

func TestMessagesPostedWhileTheGatewayWasDownAreHandedOnOnceWhenItIsBack(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	first := s.run(t)
	s.connected(t, first)
	before := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "before"})
	threadBefore := s.fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "before, in the thread"})
	s.sink.waitAccepted(t, before.ID, threadBefore.ID)
	first.stop(t)
	s.clock.Skip(time.Second) // the sessions' last inbound time is before what follows

	s.sessions.start[dmID] = time.Now().Add(-time.Minute) // a session no worker ran yet
	b := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "while down 1"})
	c := s.fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "while down 2"})
	d := s.fake.Post(discordtest.Post{Channel: general, Author: peerBot, Content: "while down 3"})
	e := s.fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "while down, in private"})
	s.fake.Post(discordtest.Post{Channel: general, Author: s.fake.BotID, Content: "the bot's own"})

	s.health = &health{}
	second := s.run(t)
	s.connected(t, second)
	s.sink.waitAccepted(t, b.ID, c.ID, d.ID, e.ID)
	later := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "after"})
	s.sink.waitAccepted(t, later.ID)
	ids := s.sink.acceptedIDs()
	assert.ElementsMatch(t, []string{before.ID, threadBefore.ID, b.ID, c.ID, d.ID, e.ID, later.ID}, ids, "each message once")
	assert.True(t, inOrder(ids, before.ID, b.ID, d.ID, later.ID), "general in order: %v", ids)
	assert.True(t, inOrder(ids, threadBefore.ID, c.ID), "the thread in order: %v", ids)
	got := byID(s.sink.waitAccepted(t))
	assert.Equal(t, thread, got[c.ID].ThreadID)
	assert.Equal(t, general, got[c.ID].ChatID)
	assert.True(t, got[d.ID].SenderIsBot)
	assert.Equal(t, pipeline.ChatDirect, got[e.ID].ChatType)
	s.logs.waitFor(t, "catch-up after READY", "conversations=2", "channels=3")
}

func TestANewSessionOnTheSameProcessCatchesUpToo(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	before := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "before"})
	s.sink.waitAccepted(t, before.ID)
	s.clock.Skip(time.Second)

	// Discord ends the session during an outage: the RESUME is refused,
	// and what was posted meanwhile exists only in the history.
	s.fake.InvalidateSessions()
	s.fake.RefuseConnections(true)
	s.fake.DropConnections()
	waitFake(t, s.fake, "the drop", func() bool { return s.fake.Connections() == 0 })
	missed := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "lost to the gateway"})
	s.fake.RefuseConnections(false)
	s.sink.waitAccepted(t, missed.ID)
	assert.Equal(t, []string{before.ID, missed.ID}, s.sink.acceptedIDs())
	assert.Len(t, s.fake.Identifies(), 2, "a second session")
	s.logs.waitFor(t, "connection closed; connecting again")
}

func TestAZombieConnectionIsReplacedAndWhatItHeldBackArrives(t *testing.T) {
	s := newSetup(t, discordtest.Options{HeartbeatInterval: 300 * time.Millisecond})
	r := s.run(t)
	s.connected(t, r)
	waitFake(t, s.fake, "the watchdog knows the heartbeat", func() bool { return r.g.interval.Load() > 0 })
	s.fake.Zombify()
	held := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "into the void"})
	s.logs.waitFor(t, "connection silent: no heartbeat ACK and no event")
	s.sink.waitAccepted(t, held.ID)
	assert.Equal(t, []string{held.ID}, s.sink.acceptedIDs())
	assert.Equal(t, 2, s.fake.Opened(), "a second connection")
	if res := s.fake.Resumes(); assert.Len(t, res, 1) {
		assert.True(t, res[0].Resumed, "the watchdog's close keeps the session, and its RESUME replays the message")
	}
}

func TestTheMessageContentIntentRefusedIsReportedAndRetried(t *testing.T) {
	s := newSetup(t, discordtest.Options{DenyMessageContent: true})
	r := s.run(t)
	h := s.health.waitFor(t, "failed", func(h adapters.Health) bool { return h.State == adapters.StateFailed })
	assert.Contains(t, h.Error, "enable the Message Content Intent in the Developer Portal, Bot tab")
	line := s.logs.waitFor(t, "Message Content Intent")
	assert.True(t, strings.HasPrefix(line, "ERROR"), line)
	waitFake(t, s.fake, "a second attempt", func() bool { return len(s.fake.Identifies()) >= 2 })
	assert.Equal(t, 4014, s.fake.Identifies()[0].CloseCode)
	select {
	case <-r.done:
		t.Fatalf("the gateway stopped (%v); it must keep trying until the intent is enabled", r.err)
	default:
	}
}

func TestAWrongTokenStopsTheGateway(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	s.token = "wrong"
	r := s.run(t)
	select {
	case <-r.done:
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "REPLYFLOW_DISCORD_TOKEN")
	case <-time.After(testWait):
		t.Fatal("the gateway kept trying a refused token")
	}
	assert.Equal(t, adapters.StateFailed, s.health.waitFor(t, "failed", func(h adapters.Health) bool { return h.State == adapters.StateFailed }).State)
}

func TestTheCatchUpHandsTheOldestMissedMessagesUpToItsLimit(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	first := s.run(t)
	s.connected(t, first)
	before := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "before"})
	s.sink.waitAccepted(t, before.ID)
	first.stop(t)
	s.clock.Skip(time.Second)
	var missed []string
	for _, text := range []string{"one", "two", "three"} {
		missed = append(missed, s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: text}).ID)
	}
	s.health = &health{}
	s.catchupLimit = 2
	s.run(t)
	s.logs.waitFor(t, "catch-up stopped at its limit", "limit=2")
	s.sink.waitAccepted(t, missed[:2]...)
	assert.Equal(t, []string{before.ID, missed[0], missed[1]}, s.sink.acceptedIDs())
}

func TestTheCatchUpReadsOnlyTheMostRecentlyActiveConversationsUpToItsBound(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	first := s.run(t)
	s.connected(t, first)
	older := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "long ago"})
	s.sink.waitAccepted(t, older.ID)
	s.clock.Skip(time.Minute)
	newer := s.fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "a minute later"})
	s.sink.waitAccepted(t, newer.ID)
	first.stop(t)
	s.clock.Skip(time.Second)

	lost := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "while down, in the quiet channel"})
	kept := s.fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "while down, in the busy one"})
	s.health = &health{}
	s.catchupConversations = 1
	s.run(t)
	s.logs.waitFor(t, "catch-up left out the least recently active conversations", "left_out=1", "limit=1")
	s.logs.waitFor(t, "catch-up after READY", "conversations=1", "channels=1")
	s.sink.waitAccepted(t, kept.ID)
	assert.NotContains(t, s.sink.acceptedIDs(), lost.ID, "the quiet channel is past the bound")
}
