package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// The first Slack path end to end: a mention in a channel, delivered as
// Slack does (the message and app_mention twins of one post), is answered
// once, in the post's thread, with the reaction lifecycle and its clear.
func TestSlackMentionIsAnsweredOnceInItsThread(t *testing.T) {
	t.Parallel()
	s, fake := startSlackStack(t, testConfig(t))
	s.startWorker(&testModel{})
	channel := uniqueSlackChannel("C")
	fake.AddChannel(slacktest.Channel{ID: channel, Members: 5})

	post, events := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Text: "<@" + fake.BotUserID + "> hello there"})
	require.Len(t, events, 2, "Slack sends a message and an app_mention for one post")
	for _, ev := range events {
		fake.SendEvent(ev)
	}
	waitForSlack(t, fake, "the answer in the thread", func() bool { return len(fake.Thread(channel, post.TS)) > 1 })
	doneShown := func() bool {
		for _, c := range fake.Calls("reactions.add") {
			if c.Params["name"] == "white_check_mark" {
				return true
			}
		}
		return false
	}
	waitForSlack(t, fake, "✅ on the post", doneShown)
	waitForSlack(t, fake, "the reaction cleared", func() bool {
		removed := fake.Calls("reactions.remove")
		return len(removed) > 0 && removed[len(removed)-1].Params["name"] == "white_check_mark" && len(fake.Reactions(channel, post.TS)) == 0
	})

	var replies []slacktest.Message
	for _, m := range fake.Thread(channel, post.TS) {
		if m.User == fake.BotUserID {
			replies = append(replies, m)
		}
	}
	require.Len(t, replies, 1, "the twins are one message: one answer")
	assert.Contains(t, replies[0].Text, "hello there")
	assert.Equal(t, post.TS, replies[0].ThreadTS, "answered in the post's thread")
	var added []string
	for _, c := range fake.Calls("reactions.add") {
		added = append(added, c.Params["name"])
	}
	require.NotEmpty(t, added)
	assert.Equal(t, "eyes", added[0])
	assert.Equal(t, "white_check_mark", added[len(added)-1])
	key := pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: channel}
	require.Eventually(t, func() bool { return s.stateOf(key).Counters.Duplicates == 1 }, 30*time.Second, 50*time.Millisecond,
		"the second twin was dropped by the session's dedupe")
	assert.Equal(t, 1, s.stateOf(key).TurnSeq)
	for _, ack := range fake.Acks() {
		assert.NotEmpty(t, ack.EnvelopeID)
	}
	assert.Len(t, fake.Acks(), 2, "each envelope acked once, after Temporal accepted it")
	assert.False(t, strings.Contains(replies[0].Text, "<@"+fake.BotUserID+">"), "the mention was stripped")
}
