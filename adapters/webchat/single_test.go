package webchat

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func webchatHost(t *testing.T) (*Server, *httptest.Server) {
	srv, err := NewServer(ServerConfig{Sink: &recordingSink{}, BotToken: token, Auth: AuthNone})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs
}

func watcher(url, instance, tok string) *singleHost {
	return &singleHost{url: url, token: tok, instance: instance, every: 20 * time.Millisecond, logger: slog.Default(), client: http.DefaultClient}
}

// A second gateway whose web chat URL leads to the first stops with a
// reason; the first, whose URL leads to itself, keeps serving.
func TestTheWebChatRunsOnOneGatewayOnly(t *testing.T) {
	first, firstURL := webchatHost(t)
	second, _ := webchatHost(t)
	require.NotEqual(t, first.instance, second.instance)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := watcher(firstURL.URL, second.instance, token).watch(ctx)
	require.ErrorIs(t, err, ErrAnotherHost)
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_ENABLED=false")
	assert.ErrorContains(t, err, first.instance)

	// The first checks itself several times over and is never refused.
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	assert.NoError(t, watcher(firstURL.URL, first.instance, token).watch(short))

	// A gateway there that refuses the bot token is not this one either:
	// the worker's deliveries with that token would be refused.
	err = watcher(firstURL.URL, second.instance, "another-token").watch(ctx)
	require.ErrorIs(t, err, ErrAnotherHost)
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_BOT_TOKEN")
}

// Nobody at the URL (yet) is no reason to stop: the gateway keeps
// serving, and says so in its log.
func TestAnUnreachableWebChatURLDoesNotStopTheGateway(t *testing.T) {
	_, gone := webchatHost(t)
	gone.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := watcher(gone.URL, "gw-me", token).watch(ctx)
	assert.False(t, errors.Is(err, ErrAnotherHost))
	assert.NoError(t, err)

	// The route answers the bot token only.
	_, hs := webchatHost(t)
	resp, err := http.Get(hs.URL + "/bot/instance")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
