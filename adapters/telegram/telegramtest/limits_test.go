package telegramtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type handClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *handClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *handClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func limited(t *testing.T, l Limits) (*Server, *handClock) {
	t.Helper()
	s, _, _ := start(t)
	c := &handClock{t: time.Unix(1_700_000_000, 0)}
	s.mu.Lock()
	s.now = c.now
	s.mu.Unlock()
	s.EnforceLimits(l)
	return s, c
}

// raw posts a method as JSON and returns the status and the decoded body.
func raw(t *testing.T, s *Server, method string, fields map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(fields)
	resp, err := http.Post(s.URL()+"/bot"+token+"/"+method, "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func TestAChatPastItsLimitIsAnswered429AsTelegramDoes(t *testing.T) {
	s, clock := limited(t, PublishedLimits)
	chat := Private(alice.ID)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	send := func() (int, map[string]any) {
		return raw(t, s, "sendMessage", map[string]any{"chat_id": chat.ID, "text": "x"})
	}
	for range 3 {
		status, _ := send()
		require.Equal(t, http.StatusOK, status, "a burst of three is tolerated")
	}
	status, body := send()
	require.Equal(t, http.StatusTooManyRequests, status)
	assert.Equal(t, false, body["ok"])
	assert.EqualValues(t, 429, body["error_code"])
	assert.Equal(t, "Too Many Requests: retry after 1", body["description"])
	assert.Equal(t, map[string]any{"retry_after": float64(1)}, body["parameters"])

	status, _ = raw(t, s, "sendChatAction", map[string]any{"chat_id": chat.ID, "action": "typing"})
	assert.Equal(t, http.StatusTooManyRequests, status, "the chat is held for retry_after, every call")
	clock.add(time.Second)
	status, _ = send()
	assert.Equal(t, http.StatusOK, status, "after retry_after it is served again")
	assert.Equal(t, 2, s.TooManyRequestsAnswered())
	assert.Len(t, s.Sent(chat.ID), 4, "a refused call sends nothing")
}

func TestEditsCountAndTheSDKReadsRetryAfter(t *testing.T) {
	s, _ := limited(t, Limits{PerChat: time.Minute, PerChatBurst: 1})
	b := newClient(t, s, token)
	chat := Private(alice.ID)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	m, err := b.SendMessage(t.Context(), &bot.SendMessageParams{ChatID: chat.ID, Text: "one"})
	require.NoError(t, err)
	_, err = b.EditMessageText(t.Context(), &bot.EditMessageTextParams{ChatID: chat.ID, MessageID: m.ID, Text: "two"})
	var tooMany *bot.TooManyRequestsError
	require.True(t, errors.As(err, &tooMany), "an edit is a message for flood control: %v", err)
	assert.Equal(t, 60, tooMany.RetryAfter)
}

func TestAGroupGetsTwentyAMinuteAndTheBotThirtyASecond(t *testing.T) {
	s, clock := limited(t, PublishedLimits)
	group := Group(-500)
	s.AddMessage(Incoming{Chat: group, From: alice, Text: "hi"})
	for i := range 20 {
		status, _ := raw(t, s, "sendMessage", map[string]any{"chat_id": group.ID, "text": strconv.Itoa(i)})
		require.Equal(t, http.StatusOK, status, "message %d", i)
		clock.add(2 * time.Second)
	}
	status, body := raw(t, s, "sendMessage", map[string]any{"chat_id": group.ID, "text": "21st"})
	require.Equal(t, http.StatusTooManyRequests, status, "the 21st within a minute")
	assert.Equal(t, map[string]any{"retry_after": float64(20)}, body["parameters"], "until the first of the minute is a minute old")

	for i := range 30 {
		chat := Private(int64(1000 + i))
		s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
		status, _ := raw(t, s, "sendMessage", map[string]any{"chat_id": chat.ID, "text": "x"})
		require.Equal(t, http.StatusOK, status, "chat %d", i)
	}
	chat := Private(2000)
	s.AddMessage(Incoming{Chat: chat, From: alice, Text: "hi"})
	status, _ = raw(t, s, "sendMessage", map[string]any{"chat_id": chat.ID, "text": "x"})
	assert.Equal(t, http.StatusTooManyRequests, status, "the bot's 31st in a second, in a chat of its own")
}
