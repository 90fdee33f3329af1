package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

func TestTelegramTopicMessageIsAnsweredInItsTopicThroughTheReactionLifecycle(t *testing.T) {
	s := startTelegramStack(t, testConfig(t))
	chat := telegramtest.Forum(-uniqueTelegramID())
	topic := s.fake.CreateTopic(chat, tgAlice)
	release := make(chan struct{})
	s.startWorker(&testModel{hold: func(string) <-chan struct{} { return release }})

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Topic: topic, Text: "@replyflow_test_bot hello there"})
	// The model answers only once ✍ is shown, as a slow model would.
	waitFor(t, s.fake, "✍ on the message", func() bool {
		h := emojiOn(s.fake, chat, asked)
		return len(h) > 0 && h[len(h)-1] == "\u270d"
	})
	close(release)
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))

	sent := s.fake.Sent(chat.ID)
	require.Len(t, sent, 1)
	assert.Equal(t, topic, sent[0].ThreadID, "answered in the topic")
	assert.Equal(t, asked, sent[0].ReplyTo, "anchored to the question")
	assert.Contains(t, sent[0].Text, "hello there")
	assert.Equal(t, []string{"👀", "\u270d", "👌", ""}, emojiOn(s.fake, chat, asked))
	typing := s.fake.Calls("sendChatAction")
	require.NotEmpty(t, typing, "typing is shown while the model works")
	for _, call := range typing {
		assert.Equal(t, strconv.Itoa(topic), call.Params["message_thread_id"])
	}
	snap := s.stateOf(tgKey(chat))
	assert.Equal(t, workflows.StatusIdle, snap.Status)
	assert.Equal(t, 1, snap.TurnSeq)
	assert.Zero(t, s.fake.Pending(), "every update was confirmed")
}

func TestTelegramTwoUsersInOneTopicInsideTheDebounceWindowGetTwoTurns(t *testing.T) {
	cfg := testConfig(t)
	cfg.Debounce = 3 * time.Second
	s := startTelegramStack(t, cfg)
	s.startWorker(&testModel{})
	chat := telegramtest.Forum(-uniqueTelegramID())
	topic := s.fake.CreateTopic(chat, tgAlice)

	fromAlice := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Topic: topic, Text: "@replyflow_test_bot from alice"})
	fromBob := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgBob, Topic: topic, Text: "@replyflow_test_bot from bob"})
	waitFor(t, s.fake, "both reactions cleared", func() bool {
		return cleared(s.fake, chat, fromAlice)() && cleared(s.fake, chat, fromBob)()
	})

	answers := map[int]string{}
	for _, m := range s.fake.Sent(chat.ID) {
		assert.Equal(t, topic, m.ThreadID)
		answers[m.ReplyTo] = m.Text
	}
	assert.Len(t, answers, 2, "one answer each, not one merged turn")
	assert.Contains(t, answers[fromAlice], "from alice")
	assert.NotContains(t, answers[fromAlice], "from bob")
	assert.Contains(t, answers[fromBob], "from bob")
	assert.Equal(t, 2, s.stateOf(tgKey(chat)).TurnSeq)
}

func TestTelegramPhotoWithCaptionReachesTheModel(t *testing.T) {
	s := startTelegramStack(t, testConfig(t))
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Photo: "AgACphoto1", Caption: "what is this?"})
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))

	texts := sentTexts(s.fake, chat)
	require.Len(t, texts, 1)
	assert.Contains(t, texts[0], "what is this?")
	assert.Contains(t, texts[0], "[photo (image/jpeg) attached, ref AgACphoto1]")
}

func TestTelegramReactionsOnMessagesAreRecordedAsFeedback(t *testing.T) {
	s := startTelegramStack(t, testConfig(t))
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "hello"})
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	answer := s.fake.Sent(chat.ID)[0].ID

	s.fake.AddMessageReaction(tgAlice, chat.ID, answer, "👍")
	s.fake.AddMessageReaction(tgAlice, chat.ID, asked, "🔥")

	db, err := store.Open(context.Background(), s.cfg.StoreDSN)
	require.NoError(t, err)
	defer db.Close()
	session := tgKey(chat).WorkflowID()
	var got []store.Feedback
	require.Eventually(t, func() bool {
		got, err = db.Feedbacks(context.Background(), session)
		return err == nil && len(got) == 2
	}, time.Minute, 50*time.Millisecond, "both reactions are recorded")
	byEmoji := map[string]store.Feedback{}
	for _, f := range got {
		byEmoji[f.Emoji] = f
	}
	liked := byEmoji["👍"]
	assert.False(t, liked.Unresolved, "a reaction on the bot's answer resolves to it")
	assert.True(t, strings.HasPrefix(liked.MessageID, session), "the internal ID of the answer, got %q", liked.MessageID)
	assert.Equal(t, strconv.FormatInt(tgAlice.ID, 10), liked.SenderID)
	other := byEmoji["🔥"]
	assert.True(t, other.Unresolved)
	assert.Equal(t, "telegram:"+strconv.FormatInt(chat.ID, 10)+":"+strconv.Itoa(asked), other.MessageID)
	recordHistoryOf(t, s.client, tgKey(chat), "feedback")
}

func TestTelegramProposalApprovedByButton(t *testing.T) {
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.Owners = []string{"telegram:" + strconv.FormatInt(tgBoss.ID, 10)}
	s := startTelegramStack(t, cfg)
	s.startWorker(payingModel{})
	chat := telegramtest.Group(-uniqueTelegramID())

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "@replyflow_test_bot pay bob 5"})
	var proposal telegramtest.Message
	waitFor(t, s.fake, "the proposal with buttons", func() bool {
		for _, m := range s.fake.Sent(chat.ID) {
			if len(m.Buttons) > 0 {
				proposal = m
				return true
			}
		}
		return false
	})
	assert.Contains(t, proposal.Text, "Approval needed")
	assert.Equal(t, asked, proposal.ReplyTo)
	waitFor(t, s.fake, "🤔 on the request while it waits", func() bool {
		h := emojiOn(s.fake, chat, asked)
		return len(h) > 0 && h[len(h)-1] == "🤔"
	})
	approve := proposal.Buttons[0][0]
	assert.True(t, strings.HasPrefix(approve.Data, "approve:"), "the first button approves: %+v", proposal.Buttons)

	press := s.fake.AddCallbackQuery(tgBoss, chat.ID, proposal.ID, approve.Data)
	waitFor(t, s.fake, "the tool's result", func() bool {
		texts := sentTexts(s.fake, chat)
		return len(texts) > 0 && strings.HasPrefix(texts[len(texts)-1], "done:")
	})
	answered, _ := s.fake.Answered(press)
	assert.True(t, answered, "the press is answered")
	assert.Equal(t, int32(1), calls.Load(), "an approved tool runs exactly once")
	waitFor(t, s.fake, "the proposal edited", func() bool {
		m, _ := s.fake.Message(chat.ID, proposal.ID)
		return m.Edits > 0
	})
	edited, _ := s.fake.Message(chat.ID, proposal.ID)
	assert.Empty(t, edited.Buttons, "a decided proposal loses its buttons")
	assert.Contains(t, edited.Text, "Approved by telegram:"+strconv.FormatInt(tgBoss.ID, 10))
	waitFor(t, s.fake, "the request's reaction cleared", cleared(s.fake, chat, asked))
	lifecycle := emojiOn(s.fake, chat, asked)
	assert.Contains(t, lifecycle, "🤔", "the request waited for the decision")
	assert.Equal(t, []string{"👌", ""}, lifecycle[len(lifecycle)-2:], "then was done, and cleared")
}

func TestTelegram429StormEndsWithEveryChunkDeliveredOnce(t *testing.T) {
	cfg := testConfig(t)
	cfg.ChunkLimit = 40
	s := startTelegramStack(t, cfg)
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	s.fake.FailNext("sendMessage", 4, telegramtest.TooManyRequests(1))

	text := "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: text})
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))

	want := pipeline.Chunk("You said: "+text, 40)
	require.Greater(t, len(want), 2)
	assert.Equal(t, want, sentTexts(s.fake, chat), "every chunk once, in order")
	refused := 0
	for _, c := range s.fake.Calls("sendMessage") {
		if c.Status == 429 {
			refused++
		}
	}
	assert.Equal(t, 4, refused)
}
