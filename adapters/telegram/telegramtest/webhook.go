package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// The fake delivers updates to a webhook the way Telegram does once
// setWebhook named one: each pending update is POSTed as JSON to the URL
// with the secret token in X-Telegram-Bot-Api-Secret-Token, and dropped
// only when the answer is a 2xx; anything else (a refused connection, a
// 5xx, a 401) is delivered again, later each time, while the webhook is
// set and until the update is updateRetention (24 h) old by the fake's
// clock, when it is dropped, as Telegram drops it. Updates of one chat go one at a time, in order; different chats go
// in parallel, up to max_connections (40 by default, as Telegram's).

// webhookState is the pusher's part of the fake; guarded by Server.mu.
type webhookState struct {
	secret   string
	maxConns int
	inFlight map[int64]bool // update IDs being delivered
	busy     map[int64]bool // chats with an update being delivered
	retryAt  map[int64]time.Time
	failures map[int64]int
	stop     chan struct{} // closed by deleteWebhook, Close or a new setWebhook
	attempts []WebhookAttempt
}

// WebhookAttempt is one delivery of an update to the webhook.
type WebhookAttempt struct {
	UpdateID int64
	// Status is the HTTP status answered, 0 when no answer came.
	Status int
	At     time.Time
}

// webhookRetry paces the deliveries again of an update that failed:
// Telegram waits longer after each failure; the fake keeps the wait short
// so tests that kill gateways do not wait minutes.
const (
	webhookRetry    = 100 * time.Millisecond
	webhookRetryMax = 2 * time.Second
	webhookTimeout  = 30 * time.Second
)

// WebhookAttempts are the deliveries to the webhook so far.
func (s *Server) WebhookAttempts() []WebhookAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WebhookAttempt(nil), s.hook.attempts...)
}

// setWebhookLocked starts delivering to url; s.mu must be held.
func (s *Server) setWebhookLocked(p map[string]string) {
	s.stopWebhookLocked()
	s.webhook = p["url"]
	if s.webhook == "" {
		return
	}
	s.allowLocked(p)
	maxConns, err := strconv.Atoi(p["max_connections"])
	if err != nil || maxConns < 1 || maxConns > 100 {
		maxConns = 40
	}
	s.hook.secret, s.hook.maxConns = p["secret_token"], maxConns
	s.hook.inFlight, s.hook.busy = map[int64]bool{}, map[int64]bool{}
	s.hook.retryAt, s.hook.failures = map[int64]time.Time{}, map[int64]int{}
	stop := make(chan struct{})
	s.hook.stop = stop
	go s.pushUpdates(s.webhook, stop)
}

// stopWebhookLocked ends the deliveries; s.mu must be held.
func (s *Server) stopWebhookLocked() {
	if s.hook.stop != nil {
		close(s.hook.stop)
		s.hook.stop = nil
	}
	s.webhook = ""
}

// pushUpdates delivers until stop is closed.
func (s *Server) pushUpdates(url string, stop chan struct{}) {
	client := &http.Client{Timeout: webhookTimeout}
	for {
		s.mu.Lock()
		changed := s.feed.Changed()
		next := s.startDeliveriesLocked(client, url, stop)
		s.mu.Unlock()
		wait := time.NewTimer(next)
		select {
		case <-stop:
			wait.Stop()
			return
		case <-changed:
		case <-wait.C:
		}
		wait.Stop()
	}
}

// startDeliveriesLocked starts a delivery of every update that may go now
// and returns when to look again; s.mu must be held.
func (s *Server) startDeliveriesLocked(client *http.Client, url string, stop chan struct{}) time.Duration {
	s.expireLocked()
	now := time.Now()
	next := time.Second
	seen := map[int64]bool{} // chats whose oldest update this pass met
	for _, u := range s.updates {
		if !s.allowed[u.kind()] {
			continue
		}
		chat := u.chatID()
		if seen[chat] {
			continue // a chat's later updates wait for its oldest
		}
		seen[chat] = true
		if s.hook.busy[chat] {
			continue
		}
		if at := s.hook.retryAt[u.UpdateID]; at.After(now) {
			next = min(next, at.Sub(now))
			continue
		}
		if len(s.hook.inFlight) >= s.hook.maxConns {
			continue
		}
		s.hook.inFlight[u.UpdateID], s.hook.busy[chat] = true, true
		body, _ := json.Marshal(u)
		go s.deliver(client, url, stop, u.UpdateID, chat, body)
	}
	return next
}

// deliver POSTs one update and records the outcome.
func (s *Server) deliver(client *http.Client, url string, stop chan struct{}, id, chat int64, body []byte) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	status := 0
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		s.mu.Lock()
		secret := s.hook.secret
		s.mu.Unlock()
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		var resp *http.Response
		if resp, err = client.Do(req); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook.attempts = append(s.hook.attempts, WebhookAttempt{UpdateID: id, Status: status, At: time.Now()})
	delete(s.hook.inFlight, id)
	delete(s.hook.busy, chat)
	if status >= 200 && status < 300 {
		kept := s.updates[:0]
		for _, u := range s.updates {
			if u.UpdateID != id {
				kept = append(kept, u)
			}
		}
		s.updates = kept
		delete(s.hook.retryAt, id)
		delete(s.hook.failures, id)
	} else {
		s.hook.failures[id]++
		wait := webhookRetry << min(s.hook.failures[id]-1, 5)
		s.hook.retryAt[id] = time.Now().Add(min(wait, webhookRetryMax))
	}
	s.touch()
}

// chatID is the chat an update belongs to, 0 when it names none.
func (u wireUpdate) chatID() int64 {
	switch {
	case u.Message != nil:
		return u.Message.Chat.ID
	case u.EditedMessage != nil:
		return u.EditedMessage.Chat.ID
	case u.CallbackQuery != nil && u.CallbackQuery.Message != nil:
		return u.CallbackQuery.Message.Chat.ID
	case u.MessageReaction != nil:
		return u.MessageReaction.Chat.ID
	}
	return 0
}
