package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const token = "123456:test-token"

var alice = User{ID: 42, Username: "alice", FirstName: "Alice"}

func newClient(t *testing.T, s *Server, tok string) *bot.Bot {
	t.Helper()
	b, err := bot.New(tok, bot.WithServerURL(s.URL()), bot.WithSkipGetMe())
	require.NoError(t, err)
	return b
}

func start(t *testing.T) (*Server, *bot.Bot, context.Context) {
	t.Helper()
	s := New(token)
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return s, newClient(t, s, token), ctx
}

// getUpdates posts as replyflow's poller does: a JSON body.
func getUpdates(t *testing.T, s *Server, offset int64, timeout int) []models.Update {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"offset": offset, "timeout": timeout, "allowed_updates": []string{"message", "callback_query", "message_reaction"}})
	resp, err := http.Post(s.URL()+"/bot"+token+"/getUpdates", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		OK     bool            `json:"ok"`
		Result []models.Update `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.True(t, out.OK)
	return out.Result
}

func TestGetUpdatesConfirmsOnlyBelowTheOffset(t *testing.T) {
	s, _, _ := start(t)
	chat := Group(-100)
	first := s.AddMessage(Incoming{Chat: chat, From: alice, Text: "one"})
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "two"})

	got := getUpdates(t, s, 0, 0)
	require.Len(t, got, 2)
	assert.Equal(t, first, got[0].Message.ID)
	assert.Equal(t, "one", got[0].Message.Text)
	assert.Equal(t, 2, s.Pending(), "reading is not confirming")

	again := getUpdates(t, s, got[0].ID+1, 0)
	require.Len(t, again, 1)
	assert.Equal(t, "two", again[0].Message.Text)
	assert.Equal(t, 1, s.Pending())
	assert.Empty(t, getUpdates(t, s, got[1].ID+1, 0))
	assert.Zero(t, s.Pending())
}

func TestLongPollReturnsWhenAnUpdateArrives(t *testing.T) {
	s, _, ctx := start(t)
	done := make(chan []models.Update, 1)
	go func() { done <- getUpdates(t, s, 0, 8) }()
	require.NoError(t, s.WaitFor(ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.waiting == 1
	}))
	s.AddMessage(Incoming{Chat: Private(alice.ID), From: alice, Text: "hi"})
	select {
	case got := <-done:
		require.Len(t, got, 1)
		assert.Equal(t, "hi", got[0].Message.Text)
	case <-ctx.Done():
		t.Fatal("the long poll did not return the new update")
	}
}

func TestMessageReactionsComeOnlyWhenAskedFor(t *testing.T) {
	s, b, ctx := start(t)
	chat := Group(-100)
	userMsg := s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	assert.Zero(t, s.Replies(chat.ID, userMsg))
	sent, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "hello", ReplyParameters: &models.ReplyParameters{MessageID: userMsg}})
	require.NoError(t, err)
	assert.Equal(t, 1, s.Replies(chat.ID, userMsg), "the bot's reply is counted")
	assert.Zero(t, s.Replies(chat.ID, sent.ID))
	s.AddMessageReaction(alice, chat.ID, sent.ID, "👍")
	s.AddMessageReaction(alice, chat.ID, sent.ID, "🔥")

	got := getUpdates(t, s, 0, 0)
	require.Len(t, got, 3)
	r := got[2].MessageReaction
	require.NotNil(t, r)
	assert.Equal(t, sent.ID, r.MessageID)
	require.Len(t, r.OldReaction, 1)
	assert.Equal(t, "👍", r.OldReaction[0].ReactionTypeEmoji.Emoji)
	assert.Equal(t, "🔥", r.NewReaction[0].ReactionTypeEmoji.Emoji)

	resp, err := http.Post(s.URL()+"/bot"+token+"/getUpdates", "application/json", bytes.NewReader([]byte(`{"allowed_updates":["message"]}`)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1, s.Pending(), "reactions are dropped for a bot that does not ask for them")
}

func TestSendMessageInATopicAnchoredAndFormatted(t *testing.T) {
	s, b, ctx := start(t)
	chat := Forum(-200)
	topic := s.CreateTopic(chat, alice)
	userMsg := s.AddMessage(Incoming{Chat: chat, From: alice, Topic: topic, Text: "@replyflow_test_bot hi"})

	msg, err := b.SendMessage(ctx, &bot.SendMessageParams{
		ChatID: chat.ID, MessageThreadID: topic, Text: "<b>bold</b> &amp; more", ParseMode: models.ParseModeHTML,
		ReplyParameters: &models.ReplyParameters{MessageID: userMsg, AllowSendingWithoutReply: true},
		ReplyMarkup:     models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "Approve", CallbackData: "approve:1"}}}},
	})
	require.NoError(t, err)
	assert.Greater(t, msg.ID, userMsg, "one ID sequence per chat")
	assert.Equal(t, topic, msg.MessageThreadID)
	require.NotNil(t, msg.ReplyToMessage)
	assert.Equal(t, userMsg, msg.ReplyToMessage.ID)

	sent := s.Sent(chat.ID)
	require.Len(t, sent, 1)
	assert.Equal(t, "bold & more", sent[0].Text)
	assert.Equal(t, [][]Button{{{Text: "Approve", Data: "approve:1"}}}, sent[0].Buttons)

	update := getUpdates(t, s, 0, 0)[0].Message
	assert.True(t, update.IsTopicMessage)
	assert.Equal(t, topic, update.MessageThreadID)
	require.Len(t, update.Entities, 1)
	assert.Equal(t, models.MessageEntityTypeMention, update.Entities[0].Type)
}

func TestSendMessageRefusesWhatTelegramRefuses(t *testing.T) {
	s, b, ctx := start(t)
	chat := Group(-100)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	cases := map[string]*bot.SendMessageParams{
		"can't parse entities":            {ChatID: chat.ID, Text: "a < b", ParseMode: models.ParseModeHTML},
		"message text is empty":           {ChatID: chat.ID, Text: "<b></b>", ParseMode: models.ParseModeHTML},
		"message is too long":             {ChatID: chat.ID, Text: string(make([]byte, 4097))},
		"message to be replied not found": {ChatID: chat.ID, Text: "x", ReplyParameters: &models.ReplyParameters{MessageID: 999}},
		"chat not found":                  {ChatID: 5, Text: "x"},
	}
	for want, params := range cases {
		_, err := b.SendMessage(ctx, params)
		require.ErrorIs(t, err, bot.ErrorBadRequest, want)
		assert.Contains(t, err.Error(), want)
	}
	_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "x", ReplyParameters: &models.ReplyParameters{MessageID: 999, AllowSendingWithoutReply: true}})
	assert.NoError(t, err, "a missing anchor is allowed when asked")
	assert.Len(t, s.Sent(chat.ID), 1)
}

func TestReactionsUseTheAllowedSet(t *testing.T) {
	s, b, ctx := start(t)
	chat := Group(-100)
	msg := s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	react := func(chatID int64, emoji ...string) error {
		types := []models.ReactionType{}
		for _, e := range emoji {
			types = append(types, models.ReactionType{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Emoji: e}})
		}
		_, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: chatID, MessageID: msg, Reaction: types})
		return err
	}
	require.NoError(t, react(chat.ID, "👀"))
	require.NoError(t, react(chat.ID, "\u270d"))
	err := react(chat.ID, "\u270d\ufe0f")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REACTION_INVALID", "✍ with a variation selector is not in the set")
	require.NoError(t, react(chat.ID))
	assert.Equal(t, []ReactionChange{
		{ChatID: chat.ID, MessageID: msg, Emoji: []string{"👀"}},
		{ChatID: chat.ID, MessageID: msg, Emoji: []string{"\u270d"}},
		{ChatID: chat.ID, MessageID: msg, Emoji: []string{}},
	}, s.Reactions(chat.ID, msg))

	s.DisableReactions(chat)
	err = react(chat.ID, "👌")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REACTION_INVALID")
}

func TestFaultsAreAnsweredAsTelegramAnswers(t *testing.T) {
	s, b, ctx := start(t)
	chat := Private(alice.ID)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	s.FailNext("sendMessage", 1, TooManyRequests(3))
	s.FailNext("sendMessage", 1, ServerError())
	s.FailNext("sendMessage", 1, Fault{Status: http.StatusBadGateway, Description: "lost", Applied: true})

	_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "x"})
	var tooMany *bot.TooManyRequestsError
	require.True(t, errors.As(err, &tooMany), "%v", err)
	assert.Equal(t, 3, tooMany.RetryAfter)
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "x"})
	require.Error(t, err)
	assert.Empty(t, s.Sent(chat.ID), "a refused call does nothing")
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "x"})
	require.Error(t, err)
	assert.Len(t, s.Sent(chat.ID), 1, "an applied fault delivers and then fails")
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "x"})
	require.NoError(t, err)

	calls := s.Calls("sendMessage")
	require.Len(t, calls, 4)
	assert.Equal(t, []int{429, 502, 502, 200}, []int{calls[0].Status, calls[1].Status, calls[2].Status, calls[3].Status})
	assert.Equal(t, "x", calls[3].Params["text"])
}

func TestAFaultWithWhenWaitsForItsCall(t *testing.T) {
	s, b, ctx := start(t)
	chat := Private(alice.ID)
	msg := s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	fault := ServerError()
	fault.When = ClearsReaction
	s.FailNext("setMessageReaction", 1, fault)
	react := func(emoji ...string) error {
		var types []models.ReactionType
		for _, e := range emoji {
			types = append(types, models.ReactionType{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Type: models.ReactionTypeTypeEmoji, Emoji: e}})
		}
		_, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: chat.ID, MessageID: msg, Reaction: types})
		return err
	}

	require.NoError(t, react("👀"), "a call the fault is not for is served")
	require.Error(t, react(), "the clear gets the fault")
	require.NoError(t, react(), "once")
	var statuses []int
	for _, c := range s.Calls("setMessageReaction") {
		statuses = append(statuses, c.Status)
	}
	assert.Equal(t, []int{200, 502, 200}, statuses)
	assert.Len(t, s.Reactions(chat.ID, msg), 2, "the refused clear changed nothing")
}

func TestEditsAndButtonPresses(t *testing.T) {
	s, b, ctx := start(t)
	chat := Group(-100)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	keyboard := models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "Approve", CallbackData: "approve:p1"}}}}
	msg, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat.ID, Text: "proposal", ReplyMarkup: keyboard})
	require.NoError(t, err)

	query := s.AddCallbackQuery(alice, chat.ID, msg.ID, "approve:p1")
	update := getUpdates(t, s, 0, 0)[1]
	require.NotNil(t, update.CallbackQuery)
	assert.Equal(t, "approve:p1", update.CallbackQuery.Data)
	require.NotNil(t, update.CallbackQuery.Message.Message)
	assert.Equal(t, msg.ID, update.CallbackQuery.Message.Message.ID)

	_, err = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: query})
	require.NoError(t, err)
	_, err = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: query})
	assert.ErrorIs(t, err, bot.ErrorBadRequest, "a press is answered once")
	answered, _ := s.Answered(query)
	assert.True(t, answered)

	none := models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat.ID, MessageID: msg.ID, Text: "approved", ReplyMarkup: none})
	require.NoError(t, err)
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat.ID, MessageID: msg.ID, Text: "approved", ReplyMarkup: none})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "message is not modified")
	_, err = b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: chat.ID, MessageID: msg.ID, ReplyMarkup: keyboard})
	require.NoError(t, err)

	got, _ := s.Message(chat.ID, msg.ID)
	assert.Equal(t, "approved", got.Text)
	assert.Equal(t, 2, got.Edits)
	assert.Len(t, got.Buttons, 1)
}

func TestWrongTokenAndWebhookConflict(t *testing.T) {
	s, b, ctx := start(t)
	_, err := newClient(t, s, "123456:wrong").GetMe(ctx)
	assert.ErrorIs(t, err, bot.ErrorUnauthorized)
	me, err := b.GetMe(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(123456), me.ID)

	_, err = b.SetWebhook(ctx, &bot.SetWebhookParams{URL: "https://example.invalid/hook"})
	require.NoError(t, err)
	resp, err := http.Post(s.URL()+"/bot"+token+"/getUpdates", "application/json", bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
}

func TestParseHTML(t *testing.T) {
	good := map[string]string{
		"plain":                                         "plain",
		"<b>a</b> &lt;&gt;&amp;&quot;":                  `a <>&"`,
		`<a href="https://x.y/?a=1&amp;b">l</a>`:        "l",
		`<pre><code class="language-go">x</code></pre>`: "x",
		"<blockquote>q <i>i</i></blockquote>":           "q i",
		"&#128512;":                                     "😀",
	}
	for in, want := range good {
		got, err := ParseHTML(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"a < b", "a & b", "a > b", "<b>x", "<b>x</i>", "<x>y</x>", "<code><b>x</b></code>", "<a>x</a>", "<a href=\"u\"><a href=\"v\">x</a></a>", "&nope;"} {
		_, err := ParseHTML(bad)
		assert.Error(t, err, bad)
	}
}

// Telegram keeps an unconfirmed update for 24 hours, then drops it: a
// bot that polls again later never gets it.
func TestUpdatesAreDroppedAfter24Hours(t *testing.T) {
	s, _, _ := start(t)
	chat := Private(303)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "old"})
	s.Advance(23 * time.Hour)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "recent"})
	require.Len(t, getUpdates(t, s, 0, 0), 2, "both are younger than 24 hours")

	s.Advance(time.Hour)
	got := getUpdates(t, s, 0, 0)
	require.Len(t, got, 1)
	assert.Equal(t, "recent", got[0].Message.Text)
	assert.Equal(t, 1, s.Pending())
}
