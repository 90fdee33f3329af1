package telegram_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/gateway"
)

// REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE reaches the receiver the gateway
// runs: a message Telegram kept longer than it is confirmed and left out,
// a fresh one handed on.
func TestTheGatewayLeavesOutMessagesOlderThanTheCatchupMaxAge(t *testing.T) {
	fake := telegramtest.New("1000:secret")
	defer fake.Close()
	to := &ingress{}
	p := &telegram.Platform{Token: "1000:secret", APIURL: fake.URL(), Mode: "polling", CatchupMaxAge: time.Hour}
	chat := telegramtest.Private(78)
	user := telegramtest.User{ID: 78, FirstName: "Late"}
	fake.Advance(-2 * time.Hour)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user, Text: "two hours ago"})
	fake.Advance(2 * time.Hour)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user, Text: "now"})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serving, err := gateway.Serve(ctx, []adapters.Platform{p}, adapters.GatewaySide{
		Mux: http.NewServeMux(), Sink: to, Feedback: to, Health: gateway.NewStatus(), Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	defer serving.Close()
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Pending() == 0 }),
		"both confirmed: Telegram must not deliver the old one again")
	require.Eventually(t, func() bool { return len(to.texts()) == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	assert.Equal(t, []string{"now"}, to.texts(), "only the fresh message reached Temporal")
}
