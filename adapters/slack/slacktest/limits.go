package slacktest

import (
	"math"
	"net/http"
	"time"

	"github.com/replyflow/replyflow/adapters/internal/budget"
)

// Limits are the rate limits the fake enforces once EnforceLimits is
// called (a fake without them answers every call, as tests that are not
// about limits want). A call past a limit is answered as Slack does:
// HTTP 429 with a Retry-After header in whole seconds and
// {"ok":false,"error":"ratelimited"}. A refused call costs nothing.
type Limits struct {
	// PostEvery is chat.postMessage's average spacing in one channel
	// (Slack: about one a second), with PostBurst at once.
	PostEvery time.Duration
	PostBurst int
	// Tiers are methods limited per workspace, in calls a minute, with
	// as many at once (Slack's tiers allow bursts).
	Tiers map[string]int
}

// PublishedLimits are Slack's published limits for the methods replyflow
// calls: chat.postMessage about one a second per channel (three at once
// tolerated); Tier 2 (20 a minute): reactions.remove; Tier 3 (50):
// chat.update, chat.delete, reactions.add, reactions.get,
// conversations.history, conversations.replies; Tier 4 (100):
// chat.postEphemeral.
var PublishedLimits = Limits{
	PostEvery: time.Second, PostBurst: 3,
	Tiers: map[string]int{
		"reactions.remove": 20,
		"chat.update":      50, "chat.delete": 50, "reactions.add": 50, "reactions.get": 50,
		"conversations.history": 50, "conversations.replies": 50,
		"chat.postEphemeral": 100,
	},
}

// limiter is the fake's rate limiting; guarded by Server.mu. It keeps a
// bucket per channel posted in and per tiered method.
type limiter struct {
	l       Limits
	posts   map[string]*budget.Tokens
	methods map[string]*budget.Tokens
}

// EnforceLimits makes the fake answer 429 past l from now on.
func (s *Server) EnforceLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = &limiter{l: l, posts: map[string]*budget.Tokens{}, methods: map[string]*budget.Tokens{}}
}

// RateLimitedAnswered counts the calls the fake answered 429 for its
// limits (not for FailNext).
func (s *Server) RateLimitedAnswered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// overLimit is the Retry-After a call must be answered with, in
// seconds, 0 when it may go; s.mu is held.
func (s *Server) overLimit(method string, params map[string]string) int {
	lim := s.limits
	if lim == nil {
		return 0
	}
	now := time.Now()
	var b *budget.Tokens
	var every time.Duration
	var burst int
	switch perMinute := lim.l.Tiers[method]; {
	case method == "chat.postMessage" && lim.l.PostEvery > 0:
		channel := params["channel"]
		if b = lim.posts[channel]; b == nil {
			b = &budget.Tokens{}
			lim.posts[channel] = b
		}
		every, burst = lim.l.PostEvery, max(lim.l.PostBurst, 1)
	case perMinute > 0:
		if b = lim.methods[method]; b == nil {
			b = &budget.Tokens{}
			lim.methods[method] = b
		}
		every, burst = time.Minute/time.Duration(perMinute), perMinute
	default:
		return 0
	}
	wait := b.Wait(now, every, burst)
	if wait == 0 {
		b.Spend()
		return 0
	}
	s.limited++
	return max(1, int(math.Ceil(wait.Seconds())))
}

// ratelimited is Slack's 429 answer; serveAPI sets Retry-After from it.
func ratelimited(secs int) (int, answer) {
	return http.StatusTooManyRequests, answer{"ok": false, "error": "ratelimited", "retry_after": secs}
}
