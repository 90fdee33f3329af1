package webchat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/webchat"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// ingress stands for Temporal: it counts what the gateway hands on.
type ingress struct {
	mu       sync.Mutex
	accepted []pipeline.Inbound
}

func (i *ingress) Accept(_ context.Context, in pipeline.Inbound) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.accepted = append(i.accepted, in)
	return nil
}

func (i *ingress) Feedback(context.Context, pipeline.Feedback) error { return nil }

func (i *ingress) count() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.accepted)
}

func TestOverTheRateLimitAMessageGets429WithRetryAfter(t *testing.T) {
	const burst = 3
	to := &ingress{}
	limiter := gateway.NewLimiter(to, gateway.Limits{Sender: gateway.Rate{Burst: burst, Every: time.Hour}}, slog.New(slog.DiscardHandler))
	srv, err := webchat.NewServer(webchat.ServerConfig{Sink: limiter, BotToken: "t", Auth: webchat.AuthNone})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.CloseStreams()
	post := func(path, body string) *http.Response {
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	for i := range burst {
		resp := post("/api/chats/c1/messages", fmt.Sprintf(`{"message_id":"m%d","sender_id":"alice","text":"hi %d"}`, i, i))
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "message %d of the burst", i)
	}
	resp := post("/api/chats/c1/messages", `{"message_id":"over","sender_id":"alice","text":"one too many"}`)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	retryAfter, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", resp.Header.Get("Retry-After"))
	assert.InDelta(t, 3600, retryAfter, 60, "a token comes back in an hour")
	var body struct{ Error string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Contains(t, body.Error, "sender limit")
	assert.Contains(t, body.Error, "not queued")

	resp = post("/api/chats/c1/actions", `{"sender_id":"alice","message_id":"b1","action":"approve:p1"}`)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a button press counts against the same sender")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Equal(t, burst, to.count(), "the Sink saw the burst and nothing more")

	resp = post("/api/chats/c1/messages", `{"message_id":"b","sender_id":"bob","text":"hello"}`)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode, "another sender is not held")
}
