package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// The streamed preview on the other platforms' fakes: one message,
// edited as the answer grows, ending as the final text.

func TestAStreamedAnswerIsPreviewedInTheWebChat(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s := startStack(t, cfg)
	startStreamingWorker(s, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	chat := "stream-web"
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"s1","sender_id":"alice","text":"a long one"}`)
	require.Equal(t, http.StatusAccepted, code)

	seen := events.collectUntil(t, time.Minute, isClearOf("s1"))
	var messages, edits []sseEvent
	for _, e := range seen {
		switch e.Type {
		case "message":
			messages = append(messages, e)
		case "edit":
			edits = append(edits, e)
		}
	}
	require.Len(t, messages, 1, "one message: the preview")
	assert.Equal(t, "s1", messages[0].ReplyTo)
	assert.NotEqual(t, answer, messages[0].Text, "it showed the answer before it was complete")
	require.GreaterOrEqual(t, len(edits), 3, "edited as it grew")
	for _, e := range edits {
		assert.Equal(t, messages[0].MessageID, e.MessageID)
	}
	assert.Equal(t, answer, edits[len(edits)-1].Text, "it ends as the final text")
}

func TestAStreamedAnswerIsPreviewedOnSlack(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s, fake := startSlackStack(t, cfg)
	startStreamingWorker(s, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	channel := "C" + strings.ToUpper(strconv.FormatInt(time.Now().UnixNano(), 36))
	fake.AddChannel(slacktest.Channel{ID: channel, Members: 5})
	post, evs := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Text: "<@" + fake.BotUserID + "> a long one"})
	for _, ev := range evs {
		fake.SendEvent(ev)
	}
	bot := func() []slacktest.Message {
		var out []slacktest.Message
		for _, m := range fake.Thread(channel, post.TS) {
			if m.User == fake.BotUserID {
				out = append(out, m)
			}
		}
		return out
	}
	waitForSlack(t, fake, "a preview in the thread", func() bool { return len(bot()) > 0 })
	assert.NotEqual(t, answer, bot()[0].Text)
	waitForSlack(t, fake, "the final text", func() bool {
		got := bot()
		return len(got) == 1 && got[0].Text == answer
	})
	got := bot()
	require.Len(t, got, 1, "one message: the preview became the answer")
	assert.GreaterOrEqual(t, got[0].Edits, 3, "edited as it grew (chat.update)")
}

func TestAStreamedAnswerIsPreviewedOnDiscord(t *testing.T) {
	t.Parallel()
	cfg, oa, an := streamingModels(t, testConfig(t))
	s := startDiscordStack(t, cfg)
	startStreamingWorker(s.stack, oa, an, pipeline.StreamPreview)
	answer := sentence(40)
	oa.Push(modeltest.Step{Text: answer, TokenDelay: 60 * time.Millisecond})
	channel := s.newChannel()
	post := s.mention(channel, discordAlice, "a long one")

	waitForDiscord(t, s.fake, "a preview", func() bool { return len(s.fake.Sent(channel)) > 0 })
	assert.NotEqual(t, answer, s.fake.Sent(channel)[0].Content)
	s.waitCleared(channel, post.ID)
	got := s.fake.Sent(channel)
	require.Len(t, got, 1, "one message: the preview became the answer")
	assert.Equal(t, answer, got[0].Content)
	assert.GreaterOrEqual(t, got[0].Edits, 3, "edited as it grew")
	assertQuietReplyTo(t, post, got[0])
}
