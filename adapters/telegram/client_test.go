package telegram

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

const testToken = "1000:secret"

var user42 = telegramtest.User{ID: 42, Username: "user42", FirstName: "Alice"}

func fakeAndClient(t *testing.T, logs *bytes.Buffer) (*telegramtest.Server, *Client) {
	t.Helper()
	fake := telegramtest.New(testToken)
	t.Cleanup(fake.Close)
	cfg := ClientConfig{Token: testToken, APIURL: fake.URL()}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	c, err := NewClient(cfg)
	require.NoError(t, err)
	return fake, c
}

func keyOf(chat telegramtest.Chat) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: Channel, Account: "1000", Chat: strconv.FormatInt(chat.ID, 10)}
}

func TestEveryChunkOfATopicTurnCarriesTheTopicAndTheAnchor(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	ctx := context.Background()
	chat := telegramtest.Forum(-100)
	topic := fake.CreateTopic(chat, user42)
	asked := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Topic: topic, Text: "hi"})
	thread := "topic-" + strconv.Itoa(topic)

	for i, text := range []string{"**Hello** <there>", "second & last"} {
		_, err := c.Send(ctx, pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "k" + strconv.Itoa(i), ThreadID: thread, ReplyTo: strconv.Itoa(asked), Text: text, Index: i, Total: 2})
		require.NoError(t, err)
	}
	require.NoError(t, c.Typing(ctx, keyOf(chat), thread))

	sent := fake.Sent(chat.ID)
	require.Len(t, sent, 2)
	for _, m := range sent {
		assert.Equal(t, topic, m.ThreadID)
		assert.Equal(t, asked, m.ReplyTo)
	}
	assert.Equal(t, "Hello <there>", sent[0].Text)
	assert.Equal(t, "<b>Hello</b> &lt;there&gt;", sent[0].HTML)
	typing := fake.Calls("sendChatAction")
	require.Len(t, typing, 1)
	assert.Equal(t, strconv.Itoa(topic), typing[0].Params["message_thread_id"])
	for _, call := range fake.Calls("sendMessage") {
		assert.Equal(t, `{"message_id":`+strconv.Itoa(asked)+`,"allow_sending_without_reply":true}`, call.Params["reply_parameters"])
	}
}

func TestARetriedChunkIsNotSentTwice(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Private(user42.ID)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	d := pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "turn-1/0", Text: "answer"}
	first, err := c.Send(context.Background(), d)
	require.NoError(t, err)
	again, err := c.Send(context.Background(), d)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Len(t, fake.Sent(chat.ID), 1)
}

func TestAChunkTelegramCannotParseIsSentAgainAsPlainText(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Group(-100)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	fake.FailNext("sendMessage", 1, telegramtest.Fault{Status: http.StatusBadRequest, Description: "Bad Request: can't parse entities: unsupported start tag \"x\" at byte offset 0"})

	_, err := c.Send(context.Background(), pipeline.Delivery{Session: keyOf(chat), Text: "**bold** text"})
	require.NoError(t, err)
	calls := fake.Calls("sendMessage")
	require.Len(t, calls, 2)
	assert.Equal(t, "HTML", calls[0].Params["parse_mode"])
	assert.Empty(t, calls[1].Params["parse_mode"])
	assert.Equal(t, "**bold** text", fake.Sent(chat.ID)[0].Text)
}

func TestA429BecomesRateLimitedAndHoldsTheChat(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Group(-100)
	msg := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	fake.FailNext("sendMessage", 1, telegramtest.TooManyRequests(7))

	_, err := c.Send(context.Background(), pipeline.Delivery{Session: keyOf(chat), Text: "x"})
	kind, wait := adapters.Classify(err)
	assert.Equal(t, adapters.RateLimited, kind)
	assert.Equal(t, 7*time.Second, wait)

	err = c.SetReaction(context.Background(), pipeline.ReactionChange{Session: keyOf(chat), MessageID: strconv.Itoa(msg), State: pipeline.ReactionDone})
	kind, _ = adapters.Classify(err)
	assert.Equal(t, adapters.RateLimited, kind, "the chat cools down for every call")
	assert.Empty(t, fake.Calls("setMessageReaction"))
}

func TestReactionLifecycleUsesTheAllowedEmojiAndClears(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Group(-100)
	msg := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	for _, state := range []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionThinking, pipeline.ReactionWaitingUser, pipeline.ReactionDone, pipeline.ReactionError, pipeline.ReactionNone} {
		require.NoError(t, c.SetReaction(context.Background(), pipeline.ReactionChange{Session: keyOf(chat), MessageID: strconv.Itoa(msg), State: state}), state)
	}
	var got [][]string
	for _, r := range fake.Reactions(chat.ID, msg) {
		got = append(got, r.Emoji)
	}
	assert.Equal(t, [][]string{{"👀"}, {"\u270d"}, {"🤔"}, {"👌"}, {"👎"}, {}}, got)
	require.NoError(t, c.SetReaction(context.Background(), pipeline.ReactionChange{Session: keyOf(chat), MessageID: "cb-77", State: pipeline.ReactionDone}), "a button press has no message to react on")
}

func TestAChatThatRefusesReactionsTurnsTheLifecycleOffOnce(t *testing.T) {
	var logs bytes.Buffer
	fake, c := fakeAndClient(t, &logs)
	chat := telegramtest.Group(-100)
	msg := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	fake.DisableReactions(chat)
	change := func(state pipeline.ReactionState) error {
		return c.SetReaction(context.Background(), pipeline.ReactionChange{Session: keyOf(chat), MessageID: strconv.Itoa(msg), State: state})
	}
	require.NoError(t, change(pipeline.ReactionReceived))
	require.NoError(t, change(pipeline.ReactionThinking))
	require.NoError(t, change(pipeline.ReactionDone))
	assert.Len(t, fake.Calls("setMessageReaction"), 1, "no retry storm: one refused call")
	require.NoError(t, change(pipeline.ReactionNone))
	assert.Len(t, fake.Calls("setMessageReaction"), 2, "clears still go out")
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("reaction lifecycle is off")))
}

func TestEditRemovesTheButtons(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Group(-100)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: keyOf(chat), Text: "Run the tool?", Buttons: []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}})
	require.NoError(t, err)
	n, _ := strconv.Atoi(id)
	before, _ := fake.Message(chat.ID, n)
	assert.Equal(t, [][]telegramtest.Button{{{Text: "Approve", Data: "approve:p1"}, {Text: "Reject", Data: "reject:p1"}}}, before.Buttons)

	edit := pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "Run the tool?\n\n*Approved*"}
	require.NoError(t, c.Edit(context.Background(), edit))
	require.NoError(t, c.Edit(context.Background(), edit), "an edit to what is there already succeeds")
	after, _ := fake.Message(chat.ID, n)
	assert.Empty(t, after.Buttons)
	assert.Equal(t, "Run the tool?\n\nApproved", after.Text)
}
