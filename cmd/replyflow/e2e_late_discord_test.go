package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

// Discord replays nothing to a new session: what was posted while no
// gateway was connected, in a channel and in one of its active threads,
// exists only in their histories. The catch-up after the new gateway's
// READY reads both (the thread from the guild's active threads), and each
// message is answered once, where it was posted, as a reply to it,
// starting with the late note; the message answered live before is not
// answered again.
func TestDiscordMessagesPostedInAChannelAndItsThreadWhileTheGatewayWasDownAreAnsweredOnceAndLate(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.StaleAfter = lateAfter
	s := startDiscordStack(t, cfg)
	s.startWorker(&testModel{})
	channel := s.newChannel()
	thread := s.newThread(channel)
	before := s.mention(channel, discordAlice, "before the outage")
	s.waitCleared(channel, before.ID)

	s.stopGateway()
	waitForDiscord(t, s.fake, "the gateway's connection closed", func() bool { return s.fake.Connections() == 0 })
	inChannel := s.mention(channel, discordAlice, "while you were away")
	inThread := s.mention(thread, discordBob, "in the thread meanwhile")
	waitOlderThan(t, inThread.Timestamp, lateAfter)

	s.restartGateway()
	s.waitDiscordUp()
	s.waitCleared(channel, inChannel.ID)
	s.waitCleared(thread, inThread.ID)

	sent := s.fake.Sent(channel)
	require.Len(t, sent, 2, "each channel message answered once: %q", contents(sent))
	assert.Equal(t, before.ID, sent[0].Reply)
	assert.Equal(t, "You said: before the outage", firstLine(sent[0].Content), "a live message's reply has no note")
	assert.Equal(t, inChannel.ID, sent[1].Reply, "a reply to the message it answers")
	require.Regexp(t, lateNote, sent[1].Content)
	assert.Equal(t, "You said: while you were away", firstLine(lateNote.ReplaceAllString(sent[1].Content, "")))
	inThreadSent := s.fake.Sent(thread)
	require.Len(t, inThreadSent, 1, "the thread's message answered once, in the thread: %q", contents(inThreadSent))
	assert.Equal(t, inThread.ID, inThreadSent[0].Reply)
	require.Regexp(t, lateNote, inThreadSent[0].Content)
	assert.Equal(t, "You said: in the thread meanwhile", firstLine(lateNote.ReplaceAllString(inThreadSent[0].Content, "")))

	fetched := map[string]bool{}
	for _, c := range s.fake.Calls(discordtest.RouteHistory) {
		fetched[c.Vars["channel"]] = true
	}
	assert.True(t, fetched[thread], "the catch-up read the active thread's history")
	snap := s.stateOf(s.key(channel))
	assert.Equal(t, 3, snap.TurnSeq)
	assert.Equal(t, 3, snap.Counters.Inbound)
	assert.GreaterOrEqual(t, snap.Counters.Duplicates, 1, "the message before, fetched again within the margin, dropped")
}
