package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// health is what the gateway's GET /healthz says about each platform,
// to the operator (the bot token), who is told the platforms' errors.
func (s *stack) health() map[string]adapters.Health {
	return s.healthAs("Bearer " + webchatOf(s.cfg).BotToken)
}

// healthAs is what /healthz says to a request with the Authorization
// header auth ("" for none).
func (s *stack) healthAs(auth string) map[string]adapters.Health {
	req, err := http.NewRequest(http.MethodGet, s.baseURL+"/healthz", nil)
	require.NoError(s.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	var body struct {
		Platforms map[string]adapters.Health `json:"platforms"`
	}
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Platforms
}

// waitTelegramUp waits until the gateway is connected to Telegram.
func (s *stack) waitTelegramUp() {
	require.Eventually(s.t, func() bool { return s.health()[telegram.Channel].State == adapters.StateUp },
		30*time.Second, 20*time.Millisecond, "the gateway never connected to Telegram: %+v", s.health())
}

func TestTelegramUnreachableAtStartStopsNeitherTheWebChatNorItself(t *testing.T) {
	cfg := testConfig(t)
	telegramAddr := freeAddr(t)
	tg := telegramOf(cfg)
	tg.Token = telegramTestToken
	tg.APIURL = "http://" + telegramAddr
	tg.Pace, tg.GroupPerMinute = 0, 0
	s := startStack(t, cfg)
	s.startWorker(nil)

	// Bounded: a gateway still waiting for Telegram would never answer.
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(s.baseURL + "/healthz")
	require.NoError(t, err, "the gateway serves while Telegram is down")
	resp.Body.Close()
	outage := uniqueChat("outage")
	events := subscribe(t, s.baseURL, outage)
	resp, err = client.Post(s.baseURL+"/api/chats/"+outage+"/messages", "application/json",
		strings.NewReader(`{"message_id":"o1","sender_id":"alice","text":"anyone there?"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("o1"))
	assert.Contains(t, summarize(seen, "o1"), "message You said: anyone there?", "the web chat answers while Telegram is down")

	require.Eventually(t, func() bool { return s.health()[telegram.Channel].Attempts >= 1 }, 30*time.Second, 20*time.Millisecond)
	health := s.health()
	assert.Equal(t, adapters.StateUp, health["webchat"].State)
	down := health[telegram.Channel]
	assert.Equal(t, adapters.StateConnecting, down.State)
	assert.Contains(t, down.Error, "getMe")
	public := s.healthAs("")[telegram.Channel]
	assert.Equal(t, adapters.StateConnecting, public.State, "anyone sees the state")
	assert.Empty(t, public.Error, "only the operator sees the error")
	require.NotNil(t, down.NextAttemptAt, "the status says when the next attempt is")

	// Telegram comes back where the gateway looks for it.
	ln, err := net.Listen("tcp", telegramAddr)
	require.NoError(t, err)
	fake := telegramtest.NewOn(telegramTestToken, ln)
	t.Cleanup(fake.Close)
	chat := telegramtest.Private(uniqueTelegramID())
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "back again"})
	waitFor(t, fake, "the answer on Telegram", func() bool { return len(fake.Sent(chat.ID)) == 1 })
	require.Len(t, sentTexts(fake, chat), 1)
	assert.True(t, strings.HasPrefix(sentTexts(fake, chat)[0], "You said: back again"), sentTexts(fake, chat)[0])
	assert.Equal(t, adapters.Health{State: adapters.StateUp}, s.health()[telegram.Channel])
}
