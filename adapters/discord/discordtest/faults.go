package discordtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Fault is what the fake answers instead of serving a call.
type Fault struct {
	// Status is the HTTP status: 429, a 5xx, or a 4xx with Code and
	// Message as Discord's JSON error.
	Status  int
	Code    int
	Message string
	// RetryAfter and Global shape a 429: retry_after in the body (float
	// seconds), Retry-After and X-RateLimit-* headers, global true with
	// X-RateLimit-Global (which makes discordgo hold every route).
	RetryAfter time.Duration
	Global     bool
	// Applied serves the call before failing it: the answer is lost, the
	// effect is not (a message is created, a reaction set).
	Applied bool
	// Hangup closes the connection instead of answering; the call is
	// recorded with Status 0.
	Hangup bool
	// When, if set, picks the calls the fault is for; other calls of the
	// route are served, and the fault waits for its call.
	When func(Call) bool
}

// RateLimited is Discord's per-route 429, global false.
func RateLimited(retryAfter time.Duration) Fault {
	return Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// ServerError is a 500 from Discord's side; nothing was done.
func ServerError() Fault {
	return Fault{Status: http.StatusInternalServerError, Message: "500: Internal Server Error"}
}

// BadGateway is a 502; discordgo retries it by itself (MaxRestRetries).
func BadGateway() Fault { return Fault{Status: http.StatusBadGateway, Message: "502: Bad Gateway"} }

// APIError is a 4xx with Discord's JSON error code, e.g. 403 50001
// Missing Access or 404 10008 Unknown Message.
func APIError(status, code int, message string) Fault {
	return Fault{Status: status, Code: code, Message: message}
}

// AnswerLost serves the call, then answers 500: the client cannot know
// that its message was created.
func AnswerLost() Fault {
	f := ServerError()
	f.Applied = true
	return f
}

// HungUp serves the call, then hangs up without an answer. The
// client sees EOF on a POST, PATCH, PUT or DELETE; a GET on a reused
// connection is sent again by Go's transport itself, so the client sees
// no error (use AnswerLost for GETs).
func HungUp() Fault { return Fault{Applied: true, Hangup: true} }

// InChannel picks calls on the channel.
func InChannel(id string) func(Call) bool {
	return func(c Call) bool { return c.Vars["channel"] == id }
}

// FailNext makes the next n calls of route (those fault.When picks)
// answer fault.
func (s *Server) FailNext(route string, n int, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[route] = append(s.faults[route], fault)
	}
}

// takeFault pops the route's next fault if it is for this call; s.mu
// must be held.
func (s *Server) takeFault(c Call) (Fault, bool) {
	queue := s.faults[c.Route]
	for i, f := range queue {
		if f.When == nil || f.When(c) {
			s.faults[c.Route] = append(queue[:i:i], queue[i+1:]...)
			return f, true
		}
	}
	return Fault{}, false
}

// rateLimitAnswer is a 429's body and headers.
type rateLimitAnswer struct {
	body    map[string]any
	headers map[string]string
}

// answer is the fault's status and body; s.mu need not be held.
func (f Fault) answer() (int, any) {
	if f.Status != http.StatusTooManyRequests {
		status := f.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("%d: %s", status, http.StatusText(status))
		}
		return apiError(status, f.Code, msg)
	}
	secs := f.RetryAfter.Seconds()
	sum := sha1.Sum([]byte(fmt.Sprint(f.RetryAfter, f.Global)))
	headers := map[string]string{
		"Retry-After":             strconv.Itoa(int(math.Ceil(secs))),
		"X-RateLimit-Limit":       "5",
		"X-RateLimit-Remaining":   "0",
		"X-RateLimit-Reset":       strconv.FormatFloat(float64(time.Now().Add(f.RetryAfter).UnixMilli())/1000, 'f', 3, 64),
		"X-RateLimit-Reset-After": strconv.FormatFloat(secs, 'f', 3, 64),
		"X-RateLimit-Bucket":      hex.EncodeToString(sum[:8]),
		"X-RateLimit-Scope":       "user",
	}
	if f.Global {
		headers["X-RateLimit-Global"] = "true"
		headers["X-RateLimit-Scope"] = "global"
	}
	body := map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": f.Global}
	return http.StatusTooManyRequests, rateLimitAnswer{body: body, headers: headers}
}
