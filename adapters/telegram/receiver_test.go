package telegram

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

// sink records what it accepts, and refuses while down is set.
type sink struct {
	mu       sync.Mutex
	down     bool
	accepted []pipeline.Inbound
	feedback []pipeline.Feedback
}

func (s *sink) Accept(_ context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("temporal unavailable")
	}
	s.accepted = append(s.accepted, in)
	return nil
}

func (s *sink) Feedback(_ context.Context, f pipeline.Feedback) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feedback = append(s.feedback, f)
	return nil
}

func (s *sink) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accepted)
}

func newTestReceiver(t *testing.T, fake *telegramtest.Server, to *sink) *Receiver {
	t.Helper()
	r, err := NewReceiver(context.Background(), ReceiverConfig{Token: testToken, APIURL: fake.URL(), Sink: to, Feedback: to})
	require.NoError(t, err)
	return r
}

func TestPollingHoldsTheOffsetUntilTheSinkAccepts(t *testing.T) {
	fake := telegramtest.New(testToken)
	defer fake.Close()
	to := &sink{down: true}
	r := newTestReceiver(t, fake, to)
	assert.Equal(t, "replyflow_test_bot", r.Identity().Username)
	chat := telegramtest.Group(-100)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "@replyflow_test_bot hi"})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Poll(ctx) }()

	require.NoError(t, fake.WaitFor(ctx, func() bool { return len(fake.Calls("getUpdates")) >= 1 }))
	assert.Equal(t, 1, fake.Pending(), "fetched but not accepted: not confirmed")
	to.setDown(false)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Pending() == 0 }))
	require.Equal(t, 1, to.count())
	assert.True(t, to.accepted[0].MentionsBot)
	cancel()
	require.NoError(t, <-done)
}

func TestWebhookChecksTheSecretTheBodyAndTheSink(t *testing.T) {
	fake := telegramtest.New(testToken)
	defer fake.Close()
	to := &sink{}
	r := newTestReceiver(t, fake, to)
	hook := httptest.NewServer(r.WebhookHandler("s3cret"))
	defer hook.Close()
	fake.AddMessage(telegramtest.Incoming{Chat: telegramtest.Private(user42.ID), From: user42, Text: "hi"})
	update := string(fake.Updates()[0])

	post := func(secret, body string) int {
		req, _ := http.NewRequest(http.MethodPost, hook.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, post("wrong", update))
	assert.Equal(t, http.StatusUnauthorized, post("", update))
	assert.Equal(t, http.StatusBadRequest, post("s3cret", `{"update_id":`))
	assert.Equal(t, http.StatusBadRequest, post("s3cret", `{"message":{}}`))
	assert.Zero(t, to.count())
	to.setDown(true)
	assert.Equal(t, http.StatusServiceUnavailable, post("s3cret", update), "not accepted: Telegram must deliver it again")
	to.setDown(false)
	assert.Equal(t, http.StatusOK, post("s3cret", update))
	require.Equal(t, 1, to.count())
	assert.Equal(t, "hi", to.accepted[0].Text)
}

// What only a stranger holding the secret would send: not JSON (415), or
// more than an update ever is (413, not a 400 that reads as "fix the
// JSON"); neither reaches the sink, and both say why.
func TestWebhookRefusesOtherContentTypesAndOversizedBodies(t *testing.T) {
	fake := telegramtest.New(testToken)
	defer fake.Close()
	to := &sink{}
	hook := httptest.NewServer(newTestReceiver(t, fake, to).WebhookHandler("s3cret"))
	defer hook.Close()
	fake.AddMessage(telegramtest.Incoming{Chat: telegramtest.Private(user42.ID), From: user42, Text: "hi"})
	update := string(fake.Updates()[0])
	big := `{"update_id":9,"message":{"text":"` + strings.Repeat("a", maxWebhookBody) + `"}}`
	for _, c := range []struct {
		contentType, body, reason string
		want                      int
	}{
		{"text/plain", update, "application/json", http.StatusUnsupportedMediaType},
		{"", update, "application/json", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", "update=" + update, "application/json", http.StatusUnsupportedMediaType},
		{"application/json", big, "larger than", http.StatusRequestEntityTooLarge},
		{"application/json; charset=utf-8", `{"update_id":`, "not a Telegram update", http.StatusBadRequest},
	} {
		req, err := http.NewRequest(http.MethodPost, hook.URL, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", c.contentType)
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, c.want, resp.StatusCode, "%q: %s", c.contentType, answer)
		assert.Contains(t, string(answer), c.reason, c.contentType)
	}
	assert.Zero(t, to.count())
}

func TestButtonPressesAreAnsweredAndReactionsBecomeFeedback(t *testing.T) {
	fake := telegramtest.New(testToken)
	defer fake.Close()
	to := &sink{}
	r := newTestReceiver(t, fake, to)
	c, err := NewClient(ClientConfig{Token: testToken, APIURL: fake.URL()})
	require.NoError(t, err)
	chat := telegramtest.Group(-100)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: keyOf(chat), Text: "ok?", Buttons: []pipeline.Button{{Text: "Approve", Action: "approve:p1"}}})
	require.NoError(t, err)
	msg := atoi(t, id)
	query := fake.AddCallbackQuery(user42, chat.ID, msg, "approve:p1")
	fake.AddMessageReaction(user42, chat.ID, msg, "👍")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { _ = r.Poll(ctx) }()
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Pending() == 0 }))
	cancel()

	answered, _ := fake.Answered(query)
	assert.True(t, answered)
	to.mu.Lock()
	defer to.mu.Unlock()
	require.Len(t, to.accepted, 2)
	assert.Equal(t, "approve:p1", to.accepted[1].Action)
	require.Len(t, to.feedback, 1)
	assert.Equal(t, []string{"👍"}, to.feedback[0].Emoji)
	assert.Equal(t, id, to.feedback[0].MessageID)
}

// gatedSink holds the first message of one chat until another chat's
// message was accepted: only a receiver that hands chats over at once
// gets past it without a refusal.
type gatedSink struct {
	sink
	held, other string
	released    chan struct{}
	once        sync.Once
	refusals    int
}

func (s *gatedSink) Accept(ctx context.Context, in pipeline.Inbound) error {
	if in.ChatID == s.other {
		s.once.Do(func() { close(s.released) })
	}
	if in.ChatID == s.held && in.Text == "first" {
		select {
		case <-s.released:
		case <-time.After(5 * time.Second):
			s.mu.Lock()
			s.refusals++
			s.mu.Unlock()
			s.once.Do(func() { close(s.released) })
			return errors.New("held chat was never overtaken")
		}
	}
	return s.sink.Accept(ctx, in)
}

func TestPollingHandsChatsOverAtOnceAndEachChatInOrder(t *testing.T) {
	fake := telegramtest.New(testToken)
	defer fake.Close()
	held, other := telegramtest.Private(501), telegramtest.Private(502)
	to := &gatedSink{held: "501", other: "502", released: make(chan struct{})}
	r, err := NewReceiver(context.Background(), ReceiverConfig{Token: testToken, APIURL: fake.URL(), Sink: to, Feedback: to})
	require.NoError(t, err)
	for _, text := range []string{"first", "second", "third"} {
		fake.AddMessage(telegramtest.Incoming{Chat: held, From: telegramtest.User{ID: 501, FirstName: "A"}, Text: text})
	}
	fake.AddMessage(telegramtest.Incoming{Chat: other, From: telegramtest.User{ID: 502, FirstName: "B"}, Text: "hello"})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { _ = r.Poll(ctx) }()
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Pending() == 0 }))
	cancel()

	to.mu.Lock()
	defer to.mu.Unlock()
	assert.Zero(t, to.refusals, "the other chat waited behind the held one")
	var heldTexts []string
	for _, in := range to.accepted {
		if in.ChatID == "501" {
			heldTexts = append(heldTexts, in.Text)
		}
	}
	assert.Equal(t, []string{"first", "second", "third"}, heldTexts, "one chat's updates keep their order")
	assert.Len(t, to.accepted, 4)
}

// limitedSink refuses everything as the gateway's rate limits do.
type limitedSink struct{ sink }

func (*limitedSink) Accept(context.Context, pipeline.Inbound) error {
	return &adapters.RateLimitedError{Limit: "sender", RetryAfter: time.Minute}
}

func (*limitedSink) Feedback(context.Context, pipeline.Feedback) error {
	return &adapters.RateLimitedError{Limit: "sender", RetryAfter: time.Minute}
}

func TestARateLimitedUpdateIsHandledNotRedelivered(t *testing.T) {
	fake := telegramtest.New(testToken)
	defer fake.Close()
	r, err := NewReceiver(context.Background(), ReceiverConfig{Token: testToken, APIURL: fake.URL(), Sink: &limitedSink{}, Feedback: &limitedSink{}})
	require.NoError(t, err)
	hook := httptest.NewServer(r.WebhookHandler("s3cret"))
	defer hook.Close()
	chat := telegramtest.Group(-100)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	query := fake.AddCallbackQuery(user42, chat.ID, 1, "approve:p1")
	fake.AddMessageReaction(user42, chat.ID, 1, "👍")

	for _, update := range fake.Updates() {
		req, _ := http.NewRequest(http.MethodPost, hook.URL, strings.NewReader(string(update)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "dropped on purpose: Telegram must not deliver it again")
	}
	answered, text := fake.Answered(query)
	assert.True(t, answered, "the press is answered, not left spinning")
	assert.Equal(t, adapters.SlowDownNotice, text)
}
