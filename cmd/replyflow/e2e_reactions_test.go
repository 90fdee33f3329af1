package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// The reply's delivery carries the done reaction (changeCost). When
// Telegram refuses it there, the session sets it the usual way, and it is
// still cleared.
func TestTelegramDoneReactionRefusedWithTheReplyIsSetAgain(t *testing.T) {
	t.Parallel()
	s := startTelegramStack(t, testConfig(t))
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	fault := telegramtest.ServerError()
	fault.When = func(p map[string]string) bool { return strings.Contains(p["reaction"], "👌") }
	s.fake.FailNext("setMessageReaction", 1, fault)

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "hello"})
	waitFor(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	refused := 0
	for _, c := range s.fake.Calls("setMessageReaction") {
		if c.Status == http.StatusBadGateway {
			refused++
		}
	}
	assert.Equal(t, 1, refused, "the done reaction the delivery carried was refused once")
	assert.Contains(t, emojiOn(s.fake, chat, asked), "👌", "then set by the session")
	assert.Equal(t, "", emojiOn(s.fake, chat, asked)[len(emojiOn(s.fake, chat, asked))-1])
	recordHistoryOf(t, s.client, tgKey(chat), "carried_reaction_refused")
}

// With REPLYFLOW_REACTION_CLEAR_DELAY=0 the reply's delivery takes the
// reaction off: no done reaction, no clear afterwards.
func TestTelegramZeroClearDelayClearsWithTheReply(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ReactionClearDelay = 0
	s := startTelegramStack(t, cfg)
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "hello"})
	waitFor(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	assert.NotContains(t, emojiOn(s.fake, chat, asked), "👌", "no done reaction")
	recordHistoryOf(t, s.client, tgKey(chat), "reply_clears_reaction")
}
