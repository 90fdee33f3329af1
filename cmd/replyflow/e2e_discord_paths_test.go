package main

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// assertQuietReplyTo checks that m answers post as a soft reply that
// pings no one, whatever its text says, and carries its nonce.
func assertQuietReplyTo(t *testing.T, post, m discordtest.Message) {
	t.Helper()
	assert.Equal(t, post.ID, m.Reply, "a reply to the post (message_reference)")
	require.NotNil(t, m.AllowedMentions, "allowed_mentions is sent")
	assert.Empty(t, m.AllowedMentions.Parse, "no @everyone, role or user mention is parsed")
	assert.False(t, m.AllowedMentions.RepliedUser, "the author replied to is not pinged")
	assert.True(t, m.Pings.None(), "nobody is notified: %+v", m.Pings)
	assert.NotEmpty(t, m.Nonce)
	assert.True(t, m.EnforceNonce)
}

func TestDiscordMentionIsAnsweredAsAQuietReplyThroughTheReactionLifecycle(t *testing.T) {
	t.Parallel()
	s := startDiscordStack(t, testConfig(t))
	release := make(chan struct{})
	s.startWorker(&testModel{hold: func(string) <-chan struct{} { return release }})
	channel := s.newChannel()

	post := s.mention(channel, discordAlice, "hello there")
	// The model answers only once ✍️ replaced 👀 and typing is shown, as
	// a slow model would (reactions are spaced 200 ms apart: a faster
	// model ends the turn's removal of 👀 before it is sent).
	waitForDiscord(t, s.fake, "✍️ alone and typing in the channel", func() bool {
		return slices.Equal(s.fake.Reactions(channel, post.ID), []string{pipeline.ReactionThinking.Emoji()}) && len(s.fake.Typing(channel)) > 0
	})
	close(release)
	s.waitCleared(channel, post.ID)

	// Discord keeps each reaction beside the others: the next state is
	// added before the one before is removed, so the post never shows none.
	assert.Equal(t, []string{"+👀", "+✍️", "-👀", "+✅", "-✍️", "-✅"}, s.reactionsOn(channel, post.ID),
		"👀 → ✍️ → ✅ → cleared, each state replacing the one before")
	replies := s.fake.Sent(channel)
	require.Len(t, replies, 1)
	assertQuietReplyTo(t, post, replies[0])
	assert.Equal(t, "You said: hello there", firstLine(replies[0].Content), "the mention stripped, the text whole")
	assert.Contains(t, replies[0].Content, pipeline.GroupNudge, "Alice speaks alone, but the guild's members make it a group")
	snap := s.stateOf(s.key(channel))
	assert.Equal(t, workflows.StatusIdle, snap.Status)
	assert.Equal(t, 1, snap.TurnSeq)
	assert.Empty(t, snap.Reactions, "no reaction is left behind")
	recordHistoryOf(t, s.client, s.key(channel), "discord_mention")
}

// A message in a thread belongs to the session of the thread's parent
// channel; the thread is its lane, where the answer, the reactions and
// typing go.
func TestDiscordMessageInAThreadIsAnsweredInTheThreadByTheParentsSession(t *testing.T) {
	t.Parallel()
	s := startDiscordStack(t, testConfig(t))
	release := make(chan struct{})
	s.startWorker(&testModel{hold: func(string) <-chan struct{} { return release }})
	parent := s.newChannel()
	thread := s.newThread(parent)

	post := s.mention(thread, discordAlice, "in the thread")
	// The model answers once typing is shown: a faster one may end the
	// turn before its first typing call, which then is never sent.
	waitForDiscord(t, s.fake, "typing in the thread", func() bool { return len(s.fake.Typing(thread)) > 0 })
	close(release)
	s.waitCleared(thread, post.ID)

	replies := s.fake.Sent(thread)
	require.Len(t, replies, 1, "answered in the thread")
	assertQuietReplyTo(t, post, replies[0])
	assert.Equal(t, "You said: in the thread", firstLine(replies[0].Content))
	assert.Empty(t, s.fake.Sent(parent), "nothing in the parent channel")
	assert.NotEmpty(t, s.fake.Typing(thread), "typing shown in the thread")
	assert.Empty(t, s.fake.Typing(parent))
	assert.Equal(t, "+👀", s.reactionsOn(thread, post.ID)[0])

	snap := s.stateOf(s.key(parent))
	assert.Equal(t, s.key(parent), snap.Session)
	assert.Equal(t, workflows.StatusIdle, snap.Status)
	assert.Equal(t, 1, snap.TurnSeq)
	require.Len(t, snap.Deliveries, 1)
	assert.Equal(t, replies[0].ID, snap.Deliveries[0].PlatformMessageID)
	_, err := s.client.DescribeWorkflowExecution(context.Background(), s.key(thread).WorkflowID(), "")
	var notFound *serviceerror.NotFound
	assert.ErrorAs(t, err, &notFound, "the thread has no session of its own")
	recordHistoryOf(t, s.client, s.key(parent), "discord_thread")
}
