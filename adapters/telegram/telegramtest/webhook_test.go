package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hookReceiver records the updates a webhook got, and fails the first
// failFirst deliveries of each update with 503.
type hookReceiver struct {
	mu        sync.Mutex
	failFirst int
	secrets   []string
	tries     map[int64]int
	accepted  []models.Update
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var u models.Update
	if err := json.NewDecoder(r.Body).Decode(&u); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secrets = append(h.secrets, r.Header.Get("X-Telegram-Bot-Api-Secret-Token"))
	h.tries[u.ID]++
	if h.tries[u.ID] <= h.failFirst {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	h.accepted = append(h.accepted, u)
}

func (h *hookReceiver) texts(chat int64) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, u := range h.accepted {
		if u.Message != nil && u.Message.Chat.ID == chat {
			out = append(out, u.Message.Text)
		}
	}
	return out
}

// Telegram delivers each update to the webhook until a 2xx, with the
// secret token, a chat's updates in order; delivered updates are gone.
func TestWebhookDeliversEveryUpdateUntilAccepted(t *testing.T) {
	s, b, ctx := start(t)
	h := &hookReceiver{failFirst: 2, tries: map[int64]int{}}
	hook := httptest.NewServer(h)
	defer hook.Close()

	one, two := Private(101), Private(202)
	for _, text := range []string{"a1", "a2", "a3"} {
		s.AddMessage(Incoming{Chat: one, From: alice, Text: text})
	}
	s.AddMessage(Incoming{Chat: two, From: alice, Text: "b1"})
	_, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: hook.URL, SecretToken: "s3cret", AllowedUpdates: []string{"message"}})
	require.NoError(t, err)

	require.NoError(t, s.WaitFor(ctx, func() bool { return s.Pending() == 0 }))
	assert.Equal(t, []string{"a1", "a2", "a3"}, h.texts(one.ID), "one chat's updates in order")
	assert.Equal(t, []string{"b1"}, h.texts(two.ID))
	h.mu.Lock()
	for _, secret := range h.secrets {
		assert.Equal(t, "s3cret", secret)
	}
	for id, n := range h.tries {
		assert.Equal(t, 3, n, "update %d: two failures, then accepted", id)
	}
	h.mu.Unlock()
	attempts := s.WebhookAttempts()
	assert.Len(t, attempts, 12)

	// After deleteWebhook, updates wait for getUpdates again.
	_, err = b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
	require.NoError(t, err)
	s.AddMessage(Incoming{Chat: one, From: alice, Text: "a4"})
	got := getUpdates(t, s, 0, 0)
	require.Len(t, got, 1)
	assert.Equal(t, "a4", got[0].Message.Text)
	assert.Len(t, s.WebhookAttempts(), 12)
}

// A webhook that stays unreachable gets the update again and again, until
// it is 24 hours old: then Telegram drops it, and nothing delivers it.
func TestWebhookGivesUpOnAnUpdateAfter24Hours(t *testing.T) {
	s, b, ctx := start(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	s.AddMessage(Incoming{Chat: Private(404), From: alice, Text: "into the void"})
	_, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: gone.URL, SecretToken: "s3cret"})
	require.NoError(t, err)
	require.NoError(t, s.WaitFor(ctx, func() bool { return len(s.WebhookAttempts()) >= 2 }), "delivered again after a failure")
	assert.Equal(t, 1, s.Pending(), "kept while younger than 24 hours")

	s.Advance(24 * time.Hour)
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.Pending() == 0 }))
	_, err = b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
	require.NoError(t, err)
	assert.Empty(t, getUpdates(t, s, 0, 0), "getUpdates does not bring it back")
}
