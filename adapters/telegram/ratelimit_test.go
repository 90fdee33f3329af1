package telegram_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// ingress stands for Temporal: it records what the gateway hands on.
type ingress struct {
	mu       sync.Mutex
	accepted []string
}

func (i *ingress) Accept(_ context.Context, in pipeline.Inbound) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.accepted = append(i.accepted, in.Text)
	return nil
}

func (i *ingress) Feedback(context.Context, pipeline.Feedback) error { return nil }

func (i *ingress) texts() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.accepted...)
}

// The gateway side as the gateway runs it (Platform.Serve behind the
// Limiter, notices through the Serving), in polling mode against the fake
// Bot API.
func TestRateLimitedUpdatesAreConfirmedAndTheSenderIsToldOnce(t *testing.T) {
	fake := telegramtest.New("1000:secret")
	defer fake.Close()
	to := &ingress{}
	limiter := gateway.NewLimiter(to, gateway.Limits{Sender: gateway.Rate{Burst: 2, Every: time.Hour}}, slog.New(slog.DiscardHandler))
	p := &telegram.Platform{Token: "1000:secret", APIURL: fake.URL(), Mode: "polling"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serving, err := gateway.Serve(ctx, []adapters.Platform{p}, adapters.GatewaySide{
		Mux: http.NewServeMux(), Sink: limiter, Feedback: limiter, Health: gateway.NewStatus(), Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	defer serving.Close()
	limiter.NotifyThrough(serving)
	require.True(t, serving.CanNotify(telegram.Channel))

	chat := telegramtest.Private(77)
	user := telegramtest.User{ID: 77, FirstName: "Flood"}
	for _, text := range []string{"one", "two", "three", "four", "five", "six"} {
		fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user, Text: text})
	}
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Pending() == 0 }),
		"every update is confirmed, the four dropped ones too: Telegram must not deliver them again")
	require.NoError(t, fake.WaitFor(ctx, func() bool { return len(fake.Sent(chat.ID)) > 0 }), "the notice is sent")
	limiter.Wait()
	cancel()

	assert.Equal(t, []string{"one", "two"}, to.texts(), "only the burst reached Temporal")
	sent := fake.Sent(chat.ID)
	require.Len(t, sent, 1, "one notice for four dropped messages")
	assert.Equal(t, adapters.SlowDownNotice, sent[0].Text)
	assert.NotZero(t, sent[0].ReplyTo, "it answers the first dropped message")
}
