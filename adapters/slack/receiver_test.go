package slack

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// recordingSink records what it accepts. It refuses the next failNext
// calls, and while hold is set each Accept waits for a value on it.
type recordingSink struct {
	mu       sync.Mutex
	failNext int
	limited  bool // refuse everything as the gateway's rate limits do
	hold     chan struct{}
	entered  chan struct{} // told when an Accept starts to wait on hold
	calls    int
	accepted []pipeline.Inbound
	feedback []pipeline.Feedback
	changed  chan struct{}
}

func newSink() *recordingSink { return &recordingSink{changed: make(chan struct{}, 100)} }

func (s *recordingSink) Accept(ctx context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	hold, entered := s.hold, s.entered
	s.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.calls++
	if s.limited {
		return &adapters.RateLimitedError{Limit: "chat", RetryAfter: time.Minute}
	}
	if s.failNext > 0 {
		s.failNext--
		return errors.New("temporal unavailable")
	}
	s.accepted = append(s.accepted, in)
	return nil
}

func (s *recordingSink) Feedback(_ context.Context, f pipeline.Feedback) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	if s.limited {
		return &adapters.RateLimitedError{Limit: "sender", RetryAfter: time.Minute}
	}
	s.feedback = append(s.feedback, f)
	return nil
}

func (s *recordingSink) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *recordingSink) setFailNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = n
}

func (s *recordingSink) setHold(hold, entered chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.entered = hold, entered
}

func (s *recordingSink) snapshot() (calls int, accepted []pipeline.Inbound, feedback []pipeline.Feedback) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, append([]pipeline.Inbound(nil), s.accepted...), append([]pipeline.Feedback(nil), s.feedback...)
}

// waitAccepted waits until the sink has accepted n messages.
func (s *recordingSink) waitAccepted(t *testing.T, ctx context.Context, n int) []pipeline.Inbound {
	t.Helper()
	for {
		_, accepted, _ := s.snapshot()
		if len(accepted) >= n {
			return accepted
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			t.Fatalf("the sink accepted %d messages, want %d: %v", len(accepted), n, ctx.Err())
		}
	}
}

func startFake(t *testing.T) *slacktest.Server {
	t.Helper()
	fake := slacktest.New(slacktest.Options{AckTimeout: 300 * time.Millisecond, PingInterval: 50 * time.Millisecond})
	t.Cleanup(fake.Close)
	fake.AddChannel(slacktest.Channel{ID: "C1", Name: "general", Members: 7})
	return fake
}

func newTestReceiverFor(t *testing.T, fake *slacktest.Server, to *recordingSink) *Receiver {
	t.Helper()
	r, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: to, Feedback: to})
	require.NoError(t, err)
	// These tests count the sink's calls of Slack's deliveries: the
	// catch-up after a refusal (catchup_test.go) comes later than they run.
	r.catchupTune = catchupTune{retryFirst: time.Hour, retryLast: time.Hour}
	return r
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewReceiverWantsASinkAndTheBotsID(t *testing.T) {
	_, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: "U"}})
	require.ErrorContains(t, err, "no sink")
	_, err = NewReceiver(ReceiverConfig{Sink: newSink()})
	require.ErrorContains(t, err, "auth.test")
}

func decodeInteraction(t *testing.T, payload []byte) slack.InteractionCallback {
	t.Helper()
	var cb slack.InteractionCallback
	require.NoError(t, json.Unmarshal(payload, &cb))
	return cb
}
