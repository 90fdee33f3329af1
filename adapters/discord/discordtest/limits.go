package discordtest

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Limits are the rate limits the fake enforces once EnforceLimits is
// called (a fake without them answers every call and names a bucket
// that never runs out, as tests that are not about limits want). Each
// route in Routes is a bucket per channel (its major parameter) of
// Limit calls per Window, counted from the window's first call; every
// answer names it in X-RateLimit-Limit, -Remaining, -Reset,
// -Reset-After and -Bucket, as Discord's do. A call past it is answered
// 429 {"message","retry_after","global":false} with Retry-After and
// X-RateLimit-Scope: user; past Global calls a second over all routes,
// {"global":true} with X-RateLimit-Global. A refused call costs nothing.
type Limits struct {
	Routes map[string]RouteLimit
	Global int
}

// RouteLimit is one route's bucket.
type RouteLimit struct {
	Limit  int
	Window time.Duration
}

// PublishedLimits are Discord's documented global limit (50 a second)
// and the per-channel buckets Discord answers for the routes replyflow
// calls: messages sent, edited, typing 5 per 5 s; reactions 1 per 250 ms.
var PublishedLimits = Limits{
	Global: 50,
	Routes: map[string]RouteLimit{
		RouteSend:    {Limit: 5, Window: 5 * time.Second},
		RouteEdit:    {Limit: 5, Window: 5 * time.Second},
		RouteTyping:  {Limit: 5, Window: 5 * time.Second},
		RouteReact:   {Limit: 1, Window: 250 * time.Millisecond},
		RouteUnreact: {Limit: 1, Window: 250 * time.Millisecond},
	},
}

// limiter is the fake's rate limiting; guarded by Server.mu. It keeps a
// window per route and channel called.
type limiter struct {
	l       Limits
	windows map[string]*window // route + " " + channel
	global  window
}

type window struct {
	used  int
	reset time.Time
}

// EnforceLimits makes the fake answer 429 past l from now on.
func (s *Server) EnforceLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = &limiter{l: l, windows: map[string]*window{}}
}

// RateLimitedAnswered counts the calls the fake answered 429 for its
// limits (not for FailNext).
func (s *Server) RateLimitedAnswered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// withHeaders is an answer with the bucket's headers to send.
type withHeaders struct {
	body    any
	headers map[string]string
}

// overLimit takes the call's place in its buckets: ok, with the headers
// its answer carries, or the 429 to answer instead; s.mu is held.
func (s *Server) overLimit(c Call) (headers map[string]string, status int, refused any) {
	lim := s.limits
	if lim == nil {
		return nil, 0, nil
	}
	now := s.Now()
	if lim.l.Global > 0 {
		if !now.Before(lim.global.reset) {
			lim.global = window{reset: now.Add(time.Second)}
		}
		if lim.global.used >= lim.l.Global {
			s.limited++
			return nil, http.StatusTooManyRequests, limitedAnswer(lim.global.reset.Sub(now), "", lim.l.Global, true)
		}
	}
	rl, ok := lim.l.Routes[c.Route]
	if !ok {
		lim.global.used++
		return nil, 0, nil
	}
	key := c.Route + " " + c.Vars["channel"]
	w := lim.windows[key]
	if w == nil {
		w = &window{}
		lim.windows[key] = w
	}
	if !now.Before(w.reset) {
		*w = window{reset: now.Add(rl.Window)}
	}
	if w.used >= rl.Limit {
		s.limited++
		return nil, http.StatusTooManyRequests, limitedAnswer(w.reset.Sub(now), c.Route, rl.Limit, false)
	}
	w.used++
	lim.global.used++
	return bucketHeaders(c.Route, rl.Limit, rl.Limit-w.used, w.reset.Sub(now), now), 0, nil
}

// bucketHeaders name a bucket's state; its reset is rounded up to the
// millisecond, so that a client waiting for it never comes back early.
func bucketHeaders(route string, limit, remaining int, resetAfter time.Duration, now time.Time) map[string]string {
	sum := sha1.Sum([]byte(route))
	ms := math.Ceil(float64(resetAfter) / float64(time.Millisecond))
	return map[string]string{
		"X-RateLimit-Limit":       strconv.Itoa(limit),
		"X-RateLimit-Remaining":   strconv.Itoa(remaining),
		"X-RateLimit-Reset":       strconv.FormatFloat(math.Ceil(float64(now.Add(resetAfter).UnixNano())/1e6)/1000, 'f', 3, 64),
		"X-RateLimit-Reset-After": strconv.FormatFloat(ms/1000, 'f', 3, 64),
		"X-RateLimit-Bucket":      hex.EncodeToString(sum[:8]),
	}
}

// limitedAnswer is Discord's 429 for a route's bucket or the global
// limit.
func limitedAnswer(retryAfter time.Duration, route string, limit int, global bool) rateLimitAnswer {
	secs := math.Max(retryAfter.Seconds(), 0.001)
	headers := bucketHeaders(route, limit, 0, retryAfter, time.Now())
	headers["Retry-After"] = strconv.Itoa(int(math.Ceil(secs)))
	headers["X-RateLimit-Scope"] = "user"
	if global {
		headers = map[string]string{"Retry-After": headers["Retry-After"], "X-RateLimit-Reset-After": headers["X-RateLimit-Reset-After"],
			"X-RateLimit-Global": "true", "X-RateLimit-Scope": "global"}
	}
	return rateLimitAnswer{body: map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global}, headers: headers}
}
