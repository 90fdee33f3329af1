package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Discord sends nothing again to a new gateway process: what was posted
// while no gateway was connected exists only in the channel's history.
// The new gateway's catch-up after its READY fetches it for the running
// session, and each message is answered once, in order; the overlap with
// what the session already had is dropped by its dedupe.
func TestDiscordMessagesPostedWhileTheGatewayWasDownAreAnsweredOnceInOrder(t *testing.T) {
	t.Parallel()
	s := startDiscordStack(t, testConfig(t))
	s.startWorker(&testModel{})
	channel := s.newChannel()
	before := s.mention(channel, discordAlice, "before the outage")
	s.waitCleared(channel, before.ID)

	s.stopGateway()
	waitForDiscord(t, s.fake, "the gateway's connection closed", func() bool { return s.fake.Connections() == 0 })
	// Two senders: one sender's two messages would be one debounced turn.
	first := s.mention(channel, discordAlice, "while you were away")
	second := s.mention(channel, discordBob, "and me too")
	require.Len(t, s.fake.Messages(channel), 4, "posted with no gateway connected")

	s.restartGateway()
	s.waitDiscordUp()
	s.waitCleared(channel, first.ID, second.ID)

	sent := s.fake.Sent(channel)
	require.Len(t, sent, 3, "each message answered once: %q", contents(sent))
	var repliesTo, said []string
	for _, m := range sent {
		repliesTo = append(repliesTo, m.Reply)
		said = append(said, firstLine(m.Content))
	}
	assert.Equal(t, []string{before.ID, first.ID, second.ID}, repliesTo, "in the order they were posted")
	assert.Equal(t, []string{"You said: before the outage", "You said: while you were away", "You said: and me too"}, said)
	identifies := s.fake.Identifies()
	require.Len(t, identifies, 2)
	assert.NotEqual(t, identifies[0].Session, identifies[1].Session, "a fresh session, which Discord replays nothing to")
	assert.Empty(t, s.fake.Resumes())
	snap := s.stateOf(s.key(channel))
	assert.Equal(t, 3, snap.TurnSeq)
	assert.Equal(t, 3, snap.Counters.Inbound)
	// The next message after the catch-up comes live, and is answered.
	after := s.mention(channel, discordAlice, "back to normal")
	s.waitCleared(channel, after.ID)
	assert.Len(t, s.fake.Sent(channel), 4)
}
