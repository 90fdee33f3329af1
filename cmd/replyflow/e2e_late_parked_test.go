package main

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/workflows"
)

// A reply parked because Telegram refused it until the delivery deadline,
// retried by an operator past REPLYFLOW_STALE_AFTER, says which message it
// answers and how late, as a late turn's reply does: the model answered
// on time, the delivery did not.
func TestAParkedReplyRetriedPastStaleAfterSaysHowLateItIs(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort()) // for the retry command
	cfg := testConfig(t)
	cfg.StaleAfter = lateAfter
	cfg.DeliveryTimeout, cfg.DeliveryDeadline = time.Second, 2*time.Second
	cfg, fake := withTelegram(t, cfg)
	s := &telegramStack{stack: startStack(t, cfg), fake: fake}
	s.waitTelegramUp()
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	key := tgKey(chat)
	var refusing atomic.Bool
	refusing.Store(true)
	s.fake.FailNext("sendMessage", 1000, telegramtest.Fault{Status: http.StatusBadGateway, Description: "Bad Gateway",
		When: func(p map[string]string) bool {
			return refusing.Load() && p["chat_id"] == strconv.FormatInt(chat.ID, 10)
		}})

	sentAt := time.Now()
	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "are you there"})
	s.awaitStatus(key, workflows.StatusDeliveryFailed, "the turn parks once the delivery deadline passed")
	require.Empty(t, s.fake.Sent(chat.ID))
	waitOlderThan(t, sentAt, lateAfter)

	refusing.Store(false)
	require.NoError(t, retryCommand(context.Background(), s.cfg, []string{key.WorkflowID()}, &bytes.Buffer{}, s.logger))
	waitFor(t, s.fake, "the reply delivered on the retry", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	sent := sentTexts(s.fake, chat)
	require.Len(t, sent, 1, "the reply, once")
	require.Regexp(t, lateNote, sent[0], "a parked reply delivered late says so")
	assert.Equal(t, "You said: are you there", lateNote.ReplaceAllString(sent[0], ""))
}
