package telegramtest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/replyflow/replyflow/adapters/internal/budget"
)

// Limits are the flood limits the fake enforces once EnforceLimits is
// called (a fake without them answers every call, as tests that are not
// about limits want). A call past a limit is answered as Telegram does:
// HTTP 429, {"ok":false,"error_code":429,"description":"Too Many
// Requests: retry after N","parameters":{"retry_after":N}}, and the chat
// answers every call so until those N seconds are over.
type Limits struct {
	// PerChat is the average time between two messages (sent or edited)
	// in one chat, with PerChatBurst at once: Telegram's "about one a
	// second", short bursts tolerated.
	PerChat      time.Duration
	PerChatBurst int
	// GroupPerMinute is the most messages in a group in any 60 seconds.
	GroupPerMinute int
	// BotPerSecond is the most calls in any chat, of any kind, a second
	// over all chats (with as many at once).
	BotPerSecond int
}

// PublishedLimits are Telegram's published limits: one message a second
// in a chat (three at once tolerated), 20 a minute in a group, 30 a
// second for the bot.
var PublishedLimits = Limits{PerChat: time.Second, PerChatBurst: 3, GroupPerMinute: 20, BotPerSecond: 30}

// countedMessages are the methods that send or change a message: what
// the per-chat and per-group limits count.
var countedMessages = map[string]bool{
	"sendMessage": true, "sendDocument": true, "sendVoice": true, "editMessageText": true, "editMessageReplyMarkup": true,
}

// limiter is the fake's flood control; guarded by Server.mu. Its maps
// grow with the chats a test writes in (a group keeps at most
// GroupPerMinute times).
type limiter struct {
	l      Limits
	chats  map[int64]*budget.Tokens
	groups map[int64][]time.Time // at most GroupPerMinute times, oldest first
	bot    budget.Tokens
	// held are the chats answered 429 until the time given.
	held map[int64]time.Time
}

// EnforceLimits makes the fake answer 429 past l from now on.
func (s *Server) EnforceLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = &limiter{l: l, chats: map[int64]*budget.Tokens{}, groups: map[int64][]time.Time{}, held: map[int64]time.Time{}}
}

// TooManyRequestsAnswered counts the calls the fake answered 429 for its limits
// (not for FailNext).
func (s *Server) TooManyRequestsAnswered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// overLimit is the retry_after a call must be answered with, 0 when it
// may go; s.mu is held.
func (s *Server) overLimit(method string, p map[string]string) int {
	lim := s.limits
	if lim == nil {
		return 0
	}
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		return 0 // not a call to a chat
	}
	now := s.now()
	if until, ok := lim.held[chat]; ok {
		if now.Before(until) {
			s.limited++
			return secondsUp(until.Sub(now))
		}
		delete(lim.held, chat)
	}
	// Every limit is looked at before any is spent: a refused call
	// costs nothing.
	var wait time.Duration
	if n := lim.l.BotPerSecond; n > 0 {
		wait = max(wait, lim.bot.Wait(now, time.Second/time.Duration(n), n))
	}
	counted := countedMessages[method]
	var perChat *budget.Tokens
	if counted && lim.l.PerChat > 0 {
		if perChat = lim.chats[chat]; perChat == nil {
			perChat = &budget.Tokens{}
			lim.chats[chat] = perChat
		}
		wait = max(wait, perChat.Wait(now, lim.l.PerChat, max(lim.l.PerChatBurst, 1)))
	}
	inGroup := counted && chat < 0 && lim.l.GroupPerMinute > 0
	if inGroup {
		times := lim.groups[chat]
		for len(times) > 0 && now.Sub(times[0]) >= time.Minute {
			times = times[1:]
		}
		lim.groups[chat] = times
		if len(times) >= lim.l.GroupPerMinute {
			wait = max(wait, times[0].Add(time.Minute).Sub(now))
		}
	}
	if wait == 0 {
		if lim.l.BotPerSecond > 0 {
			lim.bot.Spend()
		}
		if perChat != nil {
			perChat.Spend()
		}
		if inGroup {
			lim.groups[chat] = append(lim.groups[chat], now)
		}
		return 0
	}
	secs := secondsUp(wait)
	lim.held[chat] = now.Add(time.Duration(secs) * time.Second)
	s.limited++
	return secs
}

// secondsUp is d in whole seconds, rounded up, at least one: Telegram's
// retry_after is an integer.
func secondsUp(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// floodAnswer is Telegram's 429 for retry after secs.
func floodAnswer(secs int) (int, wireResponse) {
	return http.StatusTooManyRequests, wireResponse{ErrorCode: http.StatusTooManyRequests,
		Description: fmt.Sprintf("Too Many Requests: retry after %d", secs), Parameters: &wireParameters{RetryAfter: secs}}
}
