package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// A preview someone deletes while the answer is written: the reply goes
// out once, as a new message, the turn is answered (not parked), and the
// chat's next message is answered too. (The web chat keeps no messages
// that could be deleted.)

// answeredAfterDeletedPreview checks a chat's end: the answer once among
// the bot's messages, the turn answered and nothing parked.
func answeredAfterDeletedPreview(t *testing.T, state workflows.Snapshot, texts []string, answer string) {
	t.Helper()
	n := 0
	for _, text := range texts {
		if text == answer {
			n++
		}
	}
	assert.Equal(t, 1, n, "the answer once: %q", texts)
	assert.NotEqual(t, workflows.StatusDeliveryFailed, state.Status)
	require.NotNil(t, state.LastTurn)
	assert.Equal(t, "answered", state.LastTurn.Outcome)
}

func TestADeletedPreviewOnTelegramDoesNotStallTheChat(t *testing.T) {
	t.Parallel()
	s, oa, _ := streamingStack(t, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	chat := telegramtest.Private(uniqueTelegramID())
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "tell me a long story"})

	waitFor(t, s.fake, "a preview", func() bool { return len(botMessages(s.fake, chat)) > 0 })
	preview := botMessages(s.fake, chat)[0]
	require.NotEqual(t, answer, preview.Text, "deleted while the answer is written")
	s.fake.Delete(chat.ID, preview.ID)
	waitFor(t, s.fake, "the answer", func() bool { return slices.Contains(sentTexts(s.fake, chat), answer) })
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	answeredAfterDeletedPreview(t, s.stateOf(tgKey(chat)), sentTexts(s.fake, chat), answer)
	got := botMessages(s.fake, chat)
	require.Len(t, got, 1)
	assert.Equal(t, asked, got[0].ReplyTo, "the new message answers the user's")

	oa.Push(modeltest.Step{Text: "and the next one"})
	next := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "more?"})
	waitFor(t, s.fake, "the next answer", func() bool { return slices.Contains(sentTexts(s.fake, chat), "and the next one") })
	waitFor(t, s.fake, "the next reaction cleared", cleared(s.fake, chat, next))
}

func TestADeletedPreviewOnSlackDoesNotStallTheChat(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s, fake := startSlackStack(t, cfg)
	startStreamingWorker(s, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	channel := uniqueSlackChannel("D")
	fake.AddChannel(slacktest.Channel{ID: channel, Members: 2})
	_, evs := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Text: "tell me a long story"})
	for _, ev := range evs {
		fake.SendEvent(ev)
	}
	texts := func() (out []string) {
		for _, m := range fake.Sent(channel) {
			out = append(out, m.Text)
		}
		return out
	}
	waitForSlack(t, fake, "a preview", func() bool { return len(fake.Sent(channel)) > 0 })
	preview := fake.Sent(channel)[0]
	require.NotEqual(t, answer, preview.Text)
	fake.Delete(channel, preview.TS)
	waitForSlack(t, fake, "the answer", func() bool { return slices.Contains(texts(), answer) })
	key := pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: channel}
	waitForSlack(t, fake, "the turn's end", func() bool {
		st := s.stateOf(key)
		return st.Active == nil && st.LastTurn != nil && st.LastTurn.Outcome != "running"
	})
	answeredAfterDeletedPreview(t, s.stateOf(key), texts(), answer)
}

func TestADeletedPreviewOnDiscordDoesNotStallTheChat(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s := startDiscordStack(t, cfg)
	startStreamingWorker(s.stack, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	channel := s.newChannel()
	post := s.mention(channel, discordAlice, "a long one")
	texts := func() (out []string) {
		for _, m := range s.fake.Sent(channel) {
			if !m.Deleted {
				out = append(out, m.Content)
			}
		}
		return out
	}
	waitForDiscord(t, s.fake, "a preview", func() bool { return len(s.fake.Sent(channel)) > 0 })
	preview := s.fake.Sent(channel)[0]
	require.NotEqual(t, answer, preview.Content)
	s.fake.Delete(channel, preview.ID)
	s.waitCleared(channel, post.ID)
	answeredAfterDeletedPreview(t, s.stateOf(s.key(channel)), texts(), answer)
}
