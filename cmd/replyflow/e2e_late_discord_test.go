package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

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

// A channel whose session ended (idle past its TTL) keeps its cursor in
// Temporal, the closed run's last message: what was posted there while
// no gateway was connected is fetched after the READY and answered once
// in a new session, and the message the ended session answered is not
// fetched again.
func TestDiscordMessagePostedWhileTheGatewayWasDownAfterTheSessionEndedIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.SessionIdleTTL = time.Second
	s := startDiscordStack(t, cfg)
	s.startWorker(&testModel{})
	channel := s.newChannel()
	before := s.mention(channel, discordAlice, "before the outage")
	s.waitCleared(channel, before.ID)
	id := s.key(channel).WorkflowID()
	require.Eventually(t, func() bool {
		d, err := s.client.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, time.Minute, 100*time.Millisecond, "the session ended, idle past its TTL")

	s.stopGateway()
	waitForDiscord(t, s.fake, "the gateway's connection closed", func() bool { return s.fake.Connections() == 0 })
	missed := s.mention(channel, discordBob, "while you were away")

	s.restartGateway()
	s.waitDiscordUp()
	s.waitCleared(channel, missed.ID)
	sent := s.fake.Sent(channel)
	require.Len(t, sent, 2, "each message answered once: %q", contents(sent))
	assert.Equal(t, []string{before.ID, missed.ID}, []string{sent[0].Reply, sent[1].Reply})
	assert.Equal(t, "You said: while you were away", firstLine(sent[1].Content))
	assert.Equal(t, 1, s.stateOf(s.key(channel)).Counters.Inbound, "the new session took the missed message alone")
}
