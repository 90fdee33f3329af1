package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/internal/changes"
	"github.com/replyflow/replyflow/pipeline"
)

const (
	guildID  = "100000000000000100"
	general  = "100000000000000200" // a guild text channel
	thread   = "100000000000000201" // a thread in general
	dmID     = "100000000000000300"
	ada      = "100000000000000500"
	peerBot  = "100000000000000501"
	testWait = 20 * time.Second
)

// sink records what it is handed, like the gateway's Ingress would take
// it; fail, when set, refuses an Accept, and hold makes each wait.
type sink struct {
	mu       sync.Mutex
	feed     changes.Feed
	fail     func(in pipeline.Inbound) error
	hold     chan struct{}
	calls    []pipeline.Inbound // every Accept, refused or not
	accepted []pipeline.Inbound
	at       map[string]time.Time // when each chat last accepted a message
	feedback []pipeline.Feedback
}

func newSink() *sink { return &sink{at: map[string]time.Time{}} }

func (s *sink) Accept(ctx context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	hold, fail := s.hold, s.fail
	s.calls = append(s.calls, in)
	s.mu.Unlock()
	s.feed.Touch()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail != nil {
		if err := fail(in); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.accepted = append(s.accepted, in)
	s.at[in.ChatID] = time.Now()
	s.mu.Unlock()
	s.feed.Touch()
	return nil
}

func (s *sink) Feedback(_ context.Context, f pipeline.Feedback) error {
	s.mu.Lock()
	s.feedback = append(s.feedback, f)
	s.mu.Unlock()
	s.feed.Touch()
	return nil
}

func (s *sink) set(fn func(s *sink)) {
	s.mu.Lock()
	fn(s)
	s.mu.Unlock()
	s.feed.Touch()
}

func (s *sink) snapshot() (calls, accepted []pipeline.Inbound, feedback []pipeline.Feedback) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls), slices.Clone(s.accepted), slices.Clone(s.feedback)
}

// acceptedIDs are the message IDs accepted, in order.
func (s *sink) acceptedIDs() []string {
	_, accepted, _ := s.snapshot()
	var ids []string
	for _, in := range accepted {
		ids = append(ids, in.MessageID)
	}
	return ids
}

func (s *sink) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := s.feed.WaitFor(ctx, "sink", cond); err != nil {
		t.Fatalf("%s: %v (accepted %v)", what, err, s.acceptedIDs())
	}
}

// waitAccepted waits until every id was accepted.
func (s *sink) waitAccepted(t *testing.T, ids ...string) []pipeline.Inbound {
	t.Helper()
	s.waitFor(t, fmt.Sprintf("accept %v", ids), func() bool {
		got := s.acceptedIDs()
		for _, id := range ids {
			if !slices.Contains(got, id) {
				return false
			}
		}
		return true
	})
	_, accepted, _ := s.snapshot()
	return accepted
}

// sessions is a SessionLister that plays Temporal: a session runs for
// each chat the sink accepted a message of (or that start names), and
// its last inbound time is when it accepted the last one.
type sessions struct {
	sink  *sink
	bot   string
	mu    sync.Mutex
	start map[string]time.Time // chat → StartedAt, for sessions no worker ran
	calls int
}

func (l *sessions) OpenSessions(_ context.Context, channel string) ([]adapters.OpenSession, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if channel != Channel {
		return nil, errors.New("wrong channel " + channel)
	}
	var out []adapters.OpenSession
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	for chat, at := range l.sink.at {
		// The workflow takes a message a little after the gateway
		// handed it on: a millisecond is enough to keep the catch-up
		// from fetching it again.
		last := at.Add(time.Millisecond)
		out = append(out, adapters.OpenSession{Key: pipeline.SessionKey{Channel: Channel, Account: l.bot, Chat: chat}, LastInboundAt: last, StartedAt: at.Add(-time.Hour)})
	}
	for chat, at := range l.start {
		if _, ok := l.sink.at[chat]; !ok {
			out = append(out, adapters.OpenSession{Key: pipeline.SessionKey{Channel: Channel, Account: l.bot, Chat: chat}, StartedAt: at})
		}
	}
	return out, nil
}

// fastTuning keeps the tests short.
func fastTuning() tuning {
	tune := defaultTuning()
	tune.acceptDeadline = 2 * time.Second
	tune.acceptAttempt = 2 * time.Second
	tune.retryFirst, tune.retryLast = 20*time.Millisecond, 100*time.Millisecond
	tune.enqueueWait = 200 * time.Millisecond
	tune.laneIdle = 500 * time.Millisecond
	tune.catchupHold = 3 * time.Second
	tune.catchupMargin = 0
	tune.watchTick = 20 * time.Millisecond
	tune.drain = 2 * time.Second
	return tune
}

// clock is the fake's: real time, plus what a test skipped ahead.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Skip moves the fake's clock ahead: what it makes from now on is later
// than anything the gateway saw.
func (c *clock) Skip(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// newFake is a fake Discord with a guild of 3 (general and a thread in
// it), a DM with ada, ada and a peer bot.
func newFake(t *testing.T, opts discordtest.Options) *discordtest.Server {
	t.Helper()
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 10 * time.Second // quiet: a heartbeat at connect, then none
	}
	fake := discordtest.New(opts)
	t.Cleanup(fake.Close)
	fake.AddGuild(discordtest.Guild{ID: guildID, Name: "home", Members: 3})
	fake.AddChannel(discordtest.Channel{ID: general, Type: discordtest.GuildText, GuildID: guildID, Name: "general"})
	fake.AddChannel(discordtest.Channel{ID: thread, Type: discordtest.PublicThread, GuildID: guildID, ParentID: general, Name: "a thread"})
	fake.AddChannel(discordtest.Channel{ID: dmID, Type: discordtest.DM, Recipient: ada})
	fake.AddUser(discordtest.User{ID: ada, Name: "ada"})
	fake.AddUser(discordtest.User{ID: peerBot, Name: "peer", Bot: true})
	return fake
}

// running is a Gateway running against a fake.
type running struct {
	g      *Gateway
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what it returned
}

// stop ends the gateway and waits for it.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(testWait):
		t.Fatal("the gateway did not stop")
	}
}

type setup struct {
	fake     *discordtest.Server
	clock    *clock
	sink     *sink
	logs     *logs
	health   *health
	sessions *sessions
	tune     tuning
	token    string
	// catchupLimit and catchupConversations are GatewayConfig's; 0 for
	// the defaults.
	catchupLimit, catchupConversations int
}

func newSetup(t *testing.T, opts discordtest.Options) *setup {
	c := &clock{}
	opts.Now = c.Now
	fake := newFake(t, opts)
	s := newSink()
	lines := &logs{}
	t.Cleanup(func() {
		if t.Failed() {
			lines.mu.Lock()
			defer lines.mu.Unlock()
			t.Logf("the gateway's log:\n%s", strings.Join(lines.lines, "\n"))
		}
	})
	return &setup{fake: fake, clock: c, sink: s, logs: lines, health: &health{}, tune: fastTuning(), token: fake.Token,
		sessions: &sessions{sink: s, bot: fake.BotID, start: map[string]time.Time{}}}
}

// run starts a gateway; it stops with the test.
func (s *setup) run(t *testing.T) *running {
	t.Helper()
	g, err := newGateway(GatewayConfig{Token: s.token, HTTPClient: s.fake.Client(), Sink: s.sink, Feedback: s.sink,
		Sessions: s.sessions, Health: s.health, Logger: slog.New(s.logs),
		CatchupLimit: s.catchupLimit, CatchupConversations: s.catchupConversations}, s.tune)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{g: g, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = g.Run(ctx)
	}()
	t.Cleanup(func() { r.cancel(); <-r.done })
	return r
}

// connected waits until the gateway has a session and knows the bot.
func (s *setup) connected(t *testing.T, r *running) {
	t.Helper()
	// Up is reported once Open returned, which handles READY first.
	s.health.waitFor(t, "up", func(h adapters.Health) bool { return h.State == adapters.StateUp })
	if r.g.recv.botID() != s.fake.BotID {
		t.Fatalf("the gateway is up as bot %q, want %s", r.g.recv.botID(), s.fake.BotID)
	}
}

func waitFake(t *testing.T, fake *discordtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := fake.WaitFor(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
