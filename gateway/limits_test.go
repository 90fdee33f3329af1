package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/telemetry"
)

func TestParseRateReadsBurstAtIntervalOrOff(t *testing.T) {
	for text, want := range map[string]Rate{
		"20@2s":   {Burst: 20, Every: 2 * time.Second},
		" 5@1m ":  {Burst: 5, Every: time.Minute},
		"1@100ms": {Burst: 1, Every: 100 * time.Millisecond},
		"off":     {},
		"OFF":     {},
	} {
		got, err := ParseRate(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}
	for _, bad := range []string{"", "20", "20/2s", "0@1s", "-1@1s", "x@1s", "20@", "20@2", "20@0s", "20@-1s", "20@25h", "1000001@1s"} {
		_, err := ParseRate(bad)
		assert.Error(t, err, "%q", bad)
	}
	assert.Equal(t, "20@2s", DefaultSenderRate.String())
	assert.Equal(t, "off", Rate{}.String())
}

// clock is a test's time: it moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// inlet records what got through; it refuses while down.
type inlet struct {
	mu       sync.Mutex
	down     bool
	accepted []pipeline.Inbound
	feedback []pipeline.Feedback
}

func (s *inlet) Accept(_ context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("temporal unavailable")
	}
	s.accepted = append(s.accepted, in)
	return nil
}

func (s *inlet) Feedback(_ context.Context, f pipeline.Feedback) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feedback = append(s.feedback, f)
	return nil
}

func (s *inlet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accepted)
}

// notices records the notices sent.
type notices struct {
	mu   sync.Mutex
	sent []pipeline.Inbound
}

func (n *notices) CanNotify(channel string) bool { return channel != "webchat" }

func (n *notices) Notify(_ context.Context, in pipeline.Inbound, text string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if text != adapters.SlowDownNotice {
		return fmt.Errorf("unexpected notice %q", text)
	}
	n.sent = append(n.sent, in)
	return nil
}

func (n *notices) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.sent)
}

type rig struct {
	*Limiter
	clock   *clock
	inlet   *inlet
	notices *notices
	log     *bytes.Buffer
}

func newRig(limits Limits) *rig {
	r := &rig{clock: &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}, inlet: &inlet{}, notices: &notices{}, log: &bytes.Buffer{}}
	r.Limiter = NewLimiter(r.inlet, limits, slog.New(slog.NewTextHandler(&syncWriter{w: r.log}, nil)))
	r.now = r.clock.Now
	r.NotifyThrough(r.notices)
	return r
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// warnings are the log's Warn lines, once the notices in flight are done.
func (r *rig) warnings() []string {
	r.Wait()
	var out []string
	for line := range strings.Lines(r.log.String()) {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

func msg(channel, chat, sender string, n int) pipeline.Inbound {
	return pipeline.Inbound{Channel: channel, Account: "bot", ChatID: chat, SenderID: sender, MessageID: fmt.Sprint(n), Text: fmt.Sprintf("secret text %d", n)}
}

func senderOnly(r Rate) Limits { return Limits{Sender: r} }

func TestABurstPassesThenTheSenderIsRefusedUntilTheBucketRefills(t *testing.T) {
	r := newRig(senderOnly(Rate{Burst: 3, Every: 2 * time.Second}))
	ctx := t.Context()
	for i := range 3 {
		require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", i)))
	}
	err := r.Accept(ctx, msg("telegram", "1", "alice", 3))
	limited, ok := adapters.AsRateLimited(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, LimitSender, limited.Limit)
	assert.Equal(t, 2*time.Second, limited.RetryAfter, "one token comes back every 2 s")
	assert.Equal(t, 3, r.inlet.count(), "the refused message reached no one")

	r.clock.advance(time.Second)
	_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 4)))
	assert.True(t, ok, "half a token is not a token")
	r.clock.advance(time.Second)
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 5)), "refilled")
	_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 6)))
	assert.True(t, ok, "one token refilled, one spent")
	r.clock.advance(time.Hour)
	for i := range 3 {
		require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 10+i)), "a full burst again, and no more")
	}
	assert.Equal(t, 7, r.inlet.count())
}

func TestEachSenderAndEachChatHasItsOwnBucket(t *testing.T) {
	r := newRig(Limits{Sender: Rate{Burst: 2, Every: time.Hour}, Chat: Rate{Burst: 3, Every: time.Hour}})
	ctx := t.Context()
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 1)))
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 2)))
	_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 3)))
	require.True(t, ok, "alice spent her burst")
	require.NoError(t, r.Accept(ctx, msg("slack", "1", "alice", 4)), "alice on another channel is someone else")
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "bob", 5)), "bob has his own bucket")
	err := r.Accept(ctx, msg("telegram", "1", "carol", 6))
	limited, ok := adapters.AsRateLimited(err)
	require.True(t, ok, "the chat spent its burst of 3: %v", err)
	assert.Equal(t, LimitChat, limited.Limit)
	require.NoError(t, r.Accept(ctx, msg("telegram", "2", "carol", 7)), "another chat has its own bucket")
	assert.Equal(t, 5, r.inlet.count())
}

func TestATokenIsChargedOnlyForWhatTemporalTook(t *testing.T) {
	r := newRig(senderOnly(Rate{Burst: 2, Every: time.Hour}))
	ctx := t.Context()
	r.inlet.down = true
	for i := range 5 {
		err := r.Accept(ctx, msg("telegram", "1", "alice", 0))
		require.Error(t, err)
		_, limited := adapters.AsRateLimited(err)
		require.False(t, limited, "attempt %d: an outage's retries spend no tokens", i)
	}
	r.inlet.down = false
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 0)))
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 1)))
	_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 2)))
	assert.True(t, ok)
}

// heldInlet holds every Accept until released, saying when one arrives.
type heldInlet struct {
	inlet
	arrived chan struct{}
	release chan struct{}
}

func (h *heldInlet) Accept(ctx context.Context, in pipeline.Inbound) error {
	h.arrived <- struct{}{}
	<-h.release
	return h.inlet.Accept(ctx, in)
}

func TestMessagesAtOnceCannotPassOnTheSameToken(t *testing.T) {
	const burst, sent = 3, 10
	held := &heldInlet{arrived: make(chan struct{}, sent), release: make(chan struct{})}
	l := NewLimiter(held, Limits{Chat: Rate{Burst: burst, Every: time.Hour}}, slog.New(slog.DiscardHandler))
	results := make(chan error, sent)
	for i := range sent {
		go func() { results <- l.Accept(context.Background(), msg("webchat", "flood", fmt.Sprint("s", i), i)) }()
	}
	refused := 0
	for range sent - burst {
		select {
		case err := <-results:
			_, ok := adapters.AsRateLimited(err)
			require.True(t, ok, "only refusals return while the others are held: %v", err)
			refused++
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d refusals came back", refused)
		}
	}
	// The admitted ones reach the Ingress on their own goroutines, which
	// may still be on their way once the refusals are back.
	for i := range burst {
		select {
		case <-held.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of the %d admitted messages reached the Ingress", i, burst)
		}
	}
	assert.Empty(t, held.arrived, "no more reached the Ingress than the burst holds")
	close(held.release)
	for range burst {
		require.NoError(t, <-results)
	}
	assert.Equal(t, burst, held.count())
}

func TestTheMapsHoldAtMostMaxKeysAndForgetTheLeastRecentlyUsed(t *testing.T) {
	r := newRig(Limits{Sender: Rate{Burst: 1, Every: time.Hour}, Chat: Rate{Burst: 100, Every: time.Hour}, MaxKeys: 3})
	ctx := t.Context()
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "first", 0)))
	_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "first", 1)))
	require.True(t, ok)
	for i := range 10 {
		require.NoError(t, r.Accept(ctx, msg("telegram", fmt.Sprint(i), fmt.Sprint("s", i), i)))
		assert.LessOrEqual(t, r.senders.len(), 3)
		assert.LessOrEqual(t, r.chats.len(), 3)
		assert.LessOrEqual(t, r.windows.len(), 3)
	}
	assert.Equal(t, 3, r.senders.len())
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "first", 2)),
		"forgotten: the first sender's bucket is full again, as the bound's comment says")
}

func TestTheLRUForgetsWhatWasUsedLeast(t *testing.T) {
	c := newLRU[int](2)
	c.put("a", 1)
	c.put("b", 2)
	_, _ = c.get("a") // a is now used more recently than b
	c.put("c", 3)
	assert.True(t, c.has("a"))
	assert.False(t, c.has("b"))
	assert.True(t, c.has("c"))
	c.put("a", 10)
	v, ok := c.get("a")
	assert.True(t, ok)
	assert.Equal(t, 10, v)
	assert.Equal(t, 2, c.len())
}

func TestStrangersStartingSessionsMeetTheNewSessionCeilingAndKnownSendersDoNot(t *testing.T) {
	r := newRig(Limits{
		NewSessionsGlobal: Rate{Burst: 2, Every: time.Minute},
		AllowFrom:         []string{"*", "telegram:friend"},
		Owners:            []string{"telegram:boss"},
	})
	ctx := t.Context()
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "s1", 0)))
	require.NoError(t, r.Accept(ctx, msg("telegram", "2", "s2", 0)))
	err := r.Accept(ctx, msg("telegram", "3", "s3", 0))
	limited, ok := adapters.AsRateLimited(err)
	require.True(t, ok, "the third new session from a stranger: %v", err)
	assert.Equal(t, LimitNewSessionsGlobal, limited.Limit)
	assert.Equal(t, time.Minute, limited.RetryAfter)

	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "s9", 1)), "a stranger in a session accepted lately starts nothing")
	require.NoError(t, r.Accept(ctx, msg("telegram", "4", "friend", 0)), "an explicit ALLOW_FROM entry is known")
	require.NoError(t, r.Accept(ctx, msg("telegram", "5", "boss", 0)), "an explicit OWNERS entry is known")
	owner := msg("webchat", "6", "whoever", 0)
	owner.SenderIsOwner = true
	require.NoError(t, r.Accept(ctx, owner), "an owner the adapter vouches for is known")
	_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "7", "s7", 0)))
	assert.True(t, ok, `"*" names no one: a stranger is still a stranger`)

	r.clock.advance(time.Minute)
	require.NoError(t, r.Accept(ctx, msg("telegram", "3", "s3", 0)), "refilled")
	assert.Equal(t, 7, r.inlet.count())
}

func TestARefusedKeyIsWarnedAboutAndNotifiedOncePerWindow(t *testing.T) {
	r := newRig(senderOnly(Rate{Burst: 1, Every: time.Hour}))
	ctx := t.Context()
	require.NoError(t, r.Accept(ctx, msg("telegram", "1", "alice", 0)))
	for i := range 5 {
		_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 1+i)))
		require.True(t, ok)
	}
	warnings := r.warnings()
	require.Len(t, warnings, 1, "one warning for five drops")
	for _, field := range []string{"channel=telegram", "sender=alice", "session=session:telegram:bot:1", "limit=sender"} {
		assert.Contains(t, warnings[0], field)
	}
	assert.NotContains(t, r.log.String(), "secret text", "no message text in the log")
	require.Equal(t, 1, r.notices.count(), "one notice for five drops")
	assert.Equal(t, "1", r.notices.sent[0].MessageID, "to the first dropped message's chat")

	_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "2", "bob", 0)))
	assert.False(t, ok, "bob is not alice")
	r.clock.advance(NoticeWindow - time.Second)
	_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 7)))
	require.True(t, ok)
	assert.Len(t, r.warnings(), 1, "the window is still open")
	assert.Equal(t, 1, r.notices.count())

	r.clock.advance(time.Second)
	_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "1", "alice", 8)))
	require.True(t, ok)
	assert.Len(t, r.warnings(), 2, "a new window")
	assert.Equal(t, 2, r.notices.count())

	web := msg("webchat", "w", "alice", 0)
	require.NoError(t, r.Accept(ctx, web))
	_, ok = adapters.AsRateLimited(r.Accept(ctx, web))
	require.True(t, ok)
	assert.Equal(t, 2, r.notices.count(), "a platform that sends no notices gets none")
}

func TestTheNewSessionCeilingWarnsOnceAWindowForTheGatewayWithACount(t *testing.T) {
	r := newRig(Limits{NewSessionsGlobal: Rate{Burst: 1, Every: time.Hour}})
	ctx := t.Context()
	require.NoError(t, r.Accept(ctx, msg("telegram", "0", "s0", 0)))
	for i := range 4 {
		_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", fmt.Sprint(1+i), fmt.Sprint("s", 1+i), 0)))
		require.True(t, ok)
	}
	assert.Len(t, r.warnings(), 1, "four strangers, one warning")
	assert.Equal(t, 4, r.notices.count(), "each refused session's sender is told, once")
	r.clock.advance(NoticeWindow)
	_, ok := adapters.AsRateLimited(r.Accept(ctx, msg("telegram", "9", "s9", 0)))
	require.True(t, ok)
	warnings := r.warnings()
	require.Len(t, warnings, 2)
	assert.Contains(t, warnings[1], "refused_since_last_warning=3")
}

func TestReactionsCountAgainstTheSenderLimit(t *testing.T) {
	r := newRig(Limits{Sender: Rate{Burst: 2, Every: time.Hour}, Chat: Rate{Burst: 100, Every: time.Hour}, NewSessions: Rate{Burst: 1, Every: time.Hour}})
	ctx := t.Context()
	reaction := pipeline.Feedback{Channel: "slack", Account: "T1", ChatID: "C1", EventID: "e1", MessageID: "m1", SenderID: "alice", Emoji: []string{"+1"}}
	require.NoError(t, r.Feedback(ctx, reaction))
	require.NoError(t, r.Accept(ctx, msg("slack", "C1", "alice", 1)))
	err := r.Feedback(ctx, reaction)
	limited, ok := adapters.AsRateLimited(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, LimitSender, limited.Limit)
	_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("slack", "C1", "alice", 2)))
	assert.True(t, ok, "the reaction spent a token of the same bucket")
	assert.Len(t, r.inlet.feedback, 1)
	r.Wait()
	require.Equal(t, 1, r.notices.count())
	assert.Equal(t, "C1", r.notices.sent[0].ChatID, "the notice goes to the reaction's chat")
}

func TestOffTurnsEveryLimitOff(t *testing.T) {
	r := newRig(Limits{})
	for i := range 500 {
		require.NoError(t, r.Accept(t.Context(), msg("telegram", fmt.Sprint(i%7), "alice", i)))
	}
	assert.Equal(t, 500, r.inlet.count())
	assert.Nil(t, r.senders)
	assert.Nil(t, r.recent, "no memory of sessions is kept when nothing uses it")
}

// perSenderInlet routes as the Ingress does under per-sender scope.
type perSenderInlet struct{ inlet }

func (p *perSenderInlet) SessionOf(in pipeline.Inbound) pipeline.SessionKey {
	return in.SessionIn(pipeline.SessionScopePerSender)
}

func TestUnderPerSenderScopeASendersFirstMessageInAGroupIsANewSession(t *testing.T) {
	next := &perSenderInlet{}
	l := NewLimiter(next, Limits{NewSessionsGlobal: Rate{Burst: 1, Every: time.Hour}}, slog.New(slog.DiscardHandler))
	ctx := t.Context()
	group := func(sender string, n int) pipeline.Inbound {
		in := msg("telegram", "-100", sender, n)
		in.ChatType = pipeline.ChatGroup
		return in
	}
	require.NoError(t, l.Accept(ctx, group("alice", 1)), "alice's session starts")
	require.NoError(t, l.Accept(ctx, group("alice", 2)), "alice's session is not new any more")
	err := l.Accept(ctx, group("bob", 3))
	limited, ok := adapters.AsRateLimited(err)
	require.True(t, ok, "bob's first message starts bob's own session, a new one: %v", err)
	assert.Equal(t, LimitNewSessionsGlobal, limited.Limit)
	assert.Equal(t, 2, next.count())
}

func TestStrangersFirstMessagesDoNotLockOutANewSenderAndTheGlobalCeilingHoldsUnderItsOwnName(t *testing.T) {
	const ceiling = 40
	r := newRig(Limits{NewSessions: Rate{Burst: 1, Every: time.Hour}, NewSessionsGlobal: Rate{Burst: ceiling, Every: time.Hour}})
	ctx := t.Context()
	for i := range ceiling - 1 {
		require.NoError(t, r.Accept(ctx, msg("telegram", fmt.Sprint("flood", i), fmt.Sprint("stranger", i), 0)), "stranger %d's first session", i)
	}
	require.NoError(t, r.Accept(ctx, msg("telegram", "newcomer", "newcomer", 0)),
		"a new sender is not locked out by the strangers before them: each has a bucket of their own")
	err := r.Accept(ctx, msg("telegram", "flood-again", "stranger0", 1))
	limited, ok := adapters.AsRateLimited(err)
	require.True(t, ok, "a second new session from one sender meets that sender's bucket: %v", err)
	assert.Equal(t, LimitNewSessions, limited.Limit)

	err = r.Accept(ctx, msg("telegram", "late", "latecomer", 0))
	limited, ok = adapters.AsRateLimited(err)
	require.True(t, ok, "past the ceiling for the whole gateway: %v", err)
	assert.Equal(t, LimitNewSessionsGlobal, limited.Limit)
	assert.Equal(t, time.Hour, limited.RetryAfter, "the ceiling's next token")
	for i := range 3 {
		_, ok = adapters.AsRateLimited(r.Accept(ctx, msg("telegram", fmt.Sprint("late", i), fmt.Sprint("latecomer", i), 0)))
		require.True(t, ok)
	}
	var global []string
	for _, w := range r.warnings() {
		if strings.Contains(w, "limit="+LimitNewSessionsGlobal) {
			global = append(global, w)
		}
	}
	assert.Len(t, global, 1, "the global ceiling warns once a window, under its own name")
	assert.Equal(t, ceiling, r.inlet.count())
	assert.LessOrEqual(t, r.starts.len(), DefaultMaxKeys, "the per-sender buckets are bounded")
}

func TestTheNewSessionBucketsBySenderAreBounded(t *testing.T) {
	r := newRig(Limits{NewSessions: Rate{Burst: 1, Every: time.Hour}, MaxKeys: 3})
	ctx := t.Context()
	for i := range 10 {
		require.NoError(t, r.Accept(ctx, msg("telegram", fmt.Sprint(i), fmt.Sprint("s", i), 0)))
		assert.LessOrEqual(t, r.starts.len(), 3)
	}
	assert.Nil(t, r.startsAll, "no global ceiling unless set")
}

func TestTheGlobalCeilingIsCountedUnderItsOwnName(t *testing.T) {
	tel, err := telemetry.New()
	require.NoError(t, err)
	l := NewLimiter(&inlet{}, Limits{NewSessions: Rate{Burst: 5, Every: time.Hour}, NewSessionsGlobal: Rate{Burst: 1, Every: time.Hour}},
		slog.New(slog.DiscardHandler))
	counted := &Counted{Next: l, Metrics: tel.MetricsHandler()}
	require.NoError(t, counted.Accept(t.Context(), msg("telegram", "1", "s1", 0)))
	_, ok := adapters.AsRateLimited(counted.Accept(t.Context(), msg("telegram", "2", "s2", 0)))
	require.True(t, ok)
	rec := httptest.NewRecorder()
	tel.Mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Regexp(t, `replyflow_inbound\{channel="telegram",outcome="rejected",reason="rate_limit_new-sessions-global"[^}]*\} 1`, rec.Body.String())
}
