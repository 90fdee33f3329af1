package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// askedModel answers like testModel and notes the text of every prompt.
type askedModel struct {
	testModel
	mu    sync.Mutex
	asked []string
}

func (m *askedModel) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	m.mu.Lock()
	m.asked = append(m.asked, lastUserText(p))
	m.mu.Unlock()
	return m.testModel.Complete(ctx, p)
}

func (m *askedModel) prompts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.asked...)
}

// What a catch-up brings in goes through the same Sink as live messages,
// so through debounce and the queue: three messages one person sent while
// the gateway was down, handed over together when it comes back, are one
// debounced turn, the model asked once with all three, one reply (to the
// last), not three turns.
func TestTelegramBurstFromOneSenderCaughtUpIsOneDebouncedTurn(t *testing.T) {
	cfg := testConfig(t)
	cfg.Debounce = time.Second
	s := startTelegramStack(t, cfg)
	model := &askedModel{}
	s.startWorker(model)
	chat := telegramtest.Private(uniqueTelegramID())
	say := func(text string) int {
		return s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: text})
	}
	before := say("before the outage")
	s.waitCleared(chat, before)
	require.Equal(t, []string{"before the outage"}, model.prompts())

	s.stopGateway()
	burst := []int{say("one"), say("two"), say("three")}
	require.Equal(t, 3, s.fake.Pending(), "Telegram keeps them for the next getUpdates")

	s.restartGateway()
	s.waitTelegramUp()
	waitFor(t, s.fake, "the burst answered", func() bool { return len(s.fake.Sent(chat.ID)) >= 2 })
	s.waitCleared(chat, burst[2])
	snap := s.stateOf(tgKey(chat))
	assert.Equal(t, 4, snap.Counters.Inbound, "all three reached the session")
	assert.Equal(t, 2, snap.TurnSeq, "the burst is one turn")
	assert.Empty(t, snap.Queued, "nothing left to answer")
	assert.Zero(t, s.fake.Pending(), "Telegram holds nothing more")

	assert.Equal(t, []string{"before the outage", "one\ntwo\nthree"}, model.prompts(),
		"the model is asked once for the burst, with all three in the order sent")
	sent := s.fake.Sent(chat.ID)
	require.Len(t, sent, 2, "one reply for the burst: %q", sentTexts(s.fake, chat))
	assert.Equal(t, "You said: one\ntwo\nthree", sent[1].Text)
	assert.Equal(t, burst[2], sent[1].ReplyTo, "the reply answers the burst's last message")
}
