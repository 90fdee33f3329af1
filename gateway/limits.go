package gateway

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Names of the limits, as logs and adapters.RateLimitedError give them.
const (
	LimitSender      = "sender"
	LimitChat        = "chat"
	LimitNewSessions = "new-sessions"
	// LimitNewSessionsGlobal is the ceiling on new sessions for the
	// whole gateway; replyflow_inbound counts its drops under the reason
	// rate_limit_new-sessions-global.
	LimitNewSessionsGlobal = "new-sessions-global"
)

// The default limits (REPLYFLOW_RATE_SENDER, _CHAT, _NEW_SESSIONS,
// _NEW_SESSIONS_GLOBAL). Every
// inbound message costs a Temporal action and, most of the time, a model
// turn; these are set where no person typing is held back and a script
// is.
var (
	// A person types a message every few seconds at most, but a paste a
	// client cuts in parts (Telegram at 4096 characters) or a quick run
	// of button presses comes at once: 20 at once, then one every 2 s
	// (30 a minute), more than anyone types for long.
	DefaultSenderRate = Rate{Burst: 20, Every: 2 * time.Second}
	// A lively group has several people talking: 40 at once and one a
	// second (60 a minute) leave it room, and hold a crowd of accounts
	// flooding one chat, which the sender limit alone would not.
	DefaultChatRate = Rate{Burst: 40, Every: time.Second}
	// One stranger starting conversations (each a new workflow and a
	// model turn): a person opens a few at most at once (a direct chat, a
	// group or two under per-sender scope, a few web chats), so 10 at
	// once, then one every 6 s (10 a minute). Someone making chats to run
	// up costs under one identity is held to that, and cannot spend the
	// allowance of everyone else.
	DefaultNewSessionRate = Rate{Burst: 10, Every: 6 * time.Second}
	// All strangers together: the ceiling for a flood spread over many
	// identities, which no per-sender bucket sees. 300 at once (a post
	// that spreads brings a crowd within minutes), then one a second:
	// 3,600 new conversations an hour, 86,400 a day at most, whatever
	// the number of accounts. It is well above what ordinary strangers
	// arriving one by one use, so it binds only in a flood: a ceiling
	// as low as one person's would let a few hundred made-up accounts
	// keep every newcomer out for as long as they keep at it.
	DefaultNewSessionGlobalRate = Rate{Burst: 300, Every: time.Second}
)

// DefaultMaxKeys bounds each of the Limiter's maps: the buckets by
// sender, the buckets by chat, the recently accepted sessions and the
// open notice windows. A map at the bound forgets its least recently
// used key. For a bucket that means the key's next message finds a full
// bucket again: a sender who spends a burst, goes quiet while 50,000
// others speak and comes back gets a new burst; a flood that cycles
// more identities than that is still held by the chat limit and, for
// strangers, the new-session ceiling, whose bucket is one for all. A few
// hundred bytes a key: tens of MB at most for the five (the new-session
// buckets by sender are the fifth).
const DefaultMaxKeys = 50_000

// NoticeWindow is how long a refusal keeps its key quiet: a key refused
// once is warned about in the log and its sender notified once, and its
// further refusals within the window are silent. A minute, as the
// notice says "Try again in a minute".
const NoticeWindow = time.Minute

// NoticeTimeout bounds one notice to a platform.
const NoticeTimeout = 5 * time.Second

// noticeBudget bounds the notices of the whole gateway: they are the
// bot's own messages, and a flood across many chats must not spend the
// bot's platform quota on them.
var noticeBudget = Rate{Burst: 20, Every: time.Second}

// Limits are the Limiter's settings.
type Limits struct {
	// NewSessions is each stranger's bucket of new sessions (by
	// channel:sender); NewSessionsGlobal is the ceiling for all of them
	// together.
	Sender, Chat, NewSessions, NewSessionsGlobal Rate
	// AllowFrom and Owners (REPLYFLOW_ALLOW_FROM, REPLYFLOW_OWNERS): a
	// sender one of their explicit "provider:id" entries names is known,
	// and the new-session limit does not apply to it. "*" names no one.
	// (The web chat's sender_id is whatever its client says until web
	// chat authentication vouches for it: there a stranger can pass for
	// a known sender.)
	AllowFrom, Owners []string
	// MaxKeys bounds each map; DefaultMaxKeys when 0.
	MaxKeys int
}

// DefaultLimits are the limits a gateway runs with unless configured.
func DefaultLimits() Limits {
	return Limits{Sender: DefaultSenderRate, Chat: DefaultChatRate, NewSessions: DefaultNewSessionRate, NewSessionsGlobal: DefaultNewSessionGlobalRate}
}

// Inlet is what the Limiter hands what it lets through to: the Ingress.
type Inlet interface {
	adapters.Sink
	adapters.FeedbackSink
}

// Router is an Inlet that says which session a message goes to: the
// Ingress, whose per-sender scope gives each sender of a group a session
// of their own. The Limiter asks it, so that "is this session new" means
// the session the message starts, not the chat it was written in.
type Router interface {
	SessionOf(in pipeline.Inbound) pipeline.SessionKey
}

// Notifier sends the slow-down notice on the platforms that can; the
// gateway's Serving is one.
type Notifier interface {
	CanNotify(channel string) bool
	Notify(ctx context.Context, in pipeline.Inbound, text string) error
}

// Limiter is the gateway's Sink in front of the Ingress: it drops what
// strangers could flood the gateway with before it costs a Temporal
// action and a model turn. Its token buckets:
//
//   - per sender (channel:sender): messages, button presses and
//     reactions;
//   - per chat (the session): messages and button presses;
//   - new sessions from senders that are not known (see Limits): a
//     message whose session (as the Router routes it: under per-sender
//     scope, its sender's session of the group) the gateway has not
//     accepted lately costs a token of its sender's new-session bucket
//     and one of the gateway's ceiling, so that a flood of strangers
//     meets the ceiling but one stranger cannot spend it on their own,
//     and a newcomer is kept out only while the whole ceiling is spent.
//     "Lately" is a bounded memory of the sessions it accepted, kept in
//     this process: after a gateway restart every
//     session looks new once, so a burst of strangers' messages right
//     after a restart can meet this limit early. That is acceptable: the
//     limit refills within a minute, and asking Temporal whether each
//     session runs would cost the very call the limit saves.
//
// A dropped message is not handed on and not queued: Accept returns an
// adapters.RateLimitedError, which the adapter treats as handled (see
// there). Per key and NoticeWindow, one Warn is logged (the new-session
// ceiling, one bucket, warns once per window for the gateway) and one
// notice is sent to the sender through the Notifier. Nothing logs text.
//
// A message Temporal does not take gives its tokens back: an outage, and
// the retries it causes, cost no one their allowance.
//
// Every bucket is this process's: N gateways that share a platform's
// webhook calls let a sender through up to N times the limits (and the
// new-session ceiling is N times as high). Sharing the buckets would cost
// a call to a shared store per message, the cost the limits save.
type Limiter struct {
	next   Inlet
	logger *slog.Logger
	limits Limits
	known  []string
	// now is the clock; tests set it.
	now func() time.Time

	mu        sync.Mutex
	senders   *lru[*bucket]   // by channel:sender; nil when off
	chats     *lru[*bucket]   // by the chat's session workflow ID; nil when off
	starts    *lru[*bucket]   // new sessions by channel:sender; nil when off
	startsAll *bucket         // new sessions, the gateway's ceiling; nil when off
	recent    *lru[struct{}]  // by the routed session's workflow ID; nil when both are off
	windows   *lru[time.Time] // limit and key: when its quiet window ends
	notices   *rate.Limiter
	notifier  Notifier
	// startsWarnUntil ends the new-session ceiling's quiet window;
	// startsQuiet counts its refusals since its last warning.
	startsWarnUntil time.Time
	startsQuiet     int

	sending sync.WaitGroup // notices in flight
}

// bucket is one token bucket. A message is charged only once Temporal
// took it; pending counts those let through and not settled yet, so that
// many at once cannot pass on the same token.
type bucket struct {
	tokens  *rate.Limiter
	pending int
}

func newBucket(r Rate) *bucket { return &bucket{tokens: r.bucket()} }

// wait is how long until one more message fits, 0 when it fits now.
func (b *bucket) wait(now time.Time) time.Duration {
	free := b.tokens.TokensAt(now) - float64(b.pending)
	if free >= 1 {
		return 0
	}
	return time.Duration((1 - free) / float64(b.tokens.Limit()) * float64(time.Second))
}

// NewLimiter is a Limiter in front of next.
func NewLimiter(next Inlet, limits Limits, logger *slog.Logger) *Limiter {
	if limits.MaxKeys <= 0 {
		limits.MaxKeys = DefaultMaxKeys
	}
	l := &Limiter{
		next: next, logger: logger, limits: limits, now: time.Now,
		windows: newLRU[time.Time](limits.MaxKeys),
		notices: noticeBudget.bucket(),
	}
	for _, who := range slices.Concat(limits.AllowFrom, limits.Owners) {
		if who != "*" {
			l.known = append(l.known, who)
		}
	}
	if !limits.Sender.Off() {
		l.senders = newLRU[*bucket](limits.MaxKeys)
	}
	if !limits.Chat.Off() {
		l.chats = newLRU[*bucket](limits.MaxKeys)
	}
	if !limits.NewSessions.Off() {
		l.starts = newLRU[*bucket](limits.MaxKeys)
	}
	if !limits.NewSessionsGlobal.Off() {
		l.startsAll = newBucket(limits.NewSessionsGlobal)
	}
	if l.starts != nil || l.startsAll != nil {
		l.recent = newLRU[struct{}](limits.MaxKeys)
	}
	return l
}

var (
	_ adapters.Sink         = (*Limiter)(nil)
	_ adapters.FeedbackSink = (*Limiter)(nil)
)

// NotifyThrough sets where the notices go; until it is set (the
// platforms start after the Limiter is made), none is sent.
func (l *Limiter) NotifyThrough(n Notifier) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notifier = n
}

// Wait returns once the notices in flight are sent or timed out.
func (l *Limiter) Wait() { l.sending.Wait() }

// Accept hands in on unless a limit refuses it.
func (l *Limiter) Accept(ctx context.Context, in pipeline.Inbound) error {
	chat := in.Session().WorkflowID()
	ask := charge{sender: in.Channel + ":" + in.SenderID, chat: chat, session: l.sessionOf(in).WorkflowID(), mayStart: !l.isKnown(in)}
	return l.through(ask, in, func() error { return l.next.Accept(ctx, in) })
}

// Feedback hands f on unless its sender is over the sender limit.
func (l *Limiter) Feedback(ctx context.Context, f pipeline.Feedback) error {
	ask := charge{sender: f.Channel + ":" + f.SenderID, session: f.Session().WorkflowID()}
	// The notice, if any, goes to the chat's root.
	in := pipeline.Inbound{Channel: f.Channel, Account: f.Account, ChatID: f.ChatID, SenderID: f.SenderID}
	return l.through(ask, in, func() error { return l.next.Feedback(ctx, f) })
}

// sessionOf is the session in goes to: the Router's answer, or the
// chat's session when next routes by chat.
func (l *Limiter) sessionOf(in pipeline.Inbound) pipeline.SessionKey {
	if r, ok := l.next.(Router); ok {
		return r.SessionOf(in)
	}
	return in.Session()
}

// isKnown: a sender an explicit entry names, or the adapter vouches is
// an owner.
func (l *Limiter) isKnown(in pipeline.Inbound) bool {
	return in.SenderIsOwner || pipeline.Allowed(in.Channel+":"+in.SenderID, l.known)
}

// charge is what one event costs: its sender's token, its chat's when
// chat is set (the chat's session, whatever the scope: the chat limit
// holds a crowd flooding one chat), and a new session's when mayStart
// and session (where the event goes) is not recent: of the sender's
// new-session bucket and of the gateway's ceiling.
type charge struct {
	sender, chat, session string
	mayStart              bool
}

// refusal is a limit that refused, for which key, and when it takes a
// message again (the longest of the limits that refused).
type refusal struct {
	limit, key string
	retryAfter time.Duration
}

func (l *Limiter) through(ask charge, in pipeline.Inbound, handOn func() error) error {
	let, refused := l.admit(l.now(), ask)
	if refused != nil {
		return l.refuse(*refused, in)
	}
	err := handOn()
	l.settle(let, ask.session, err == nil)
	return err
}

// admit lets an event through when every bucket it costs has a token,
// and returns those buckets; else it names the first that refused.
func (l *Limiter) admit(now time.Time, ask charge) ([]*bucket, *refusal) {
	type cost struct {
		limit, key string
		b          *bucket
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var costs []cost
	if l.senders != nil {
		costs = append(costs, cost{LimitSender, ask.sender, l.senders.getOrPut(ask.sender, func() *bucket { return newBucket(l.limits.Sender) })})
	}
	if l.chats != nil && ask.chat != "" {
		costs = append(costs, cost{LimitChat, ask.chat, l.chats.getOrPut(ask.chat, func() *bucket { return newBucket(l.limits.Chat) })})
	}
	if l.recent != nil && ask.mayStart && !l.recent.has(ask.session) {
		if l.starts != nil {
			costs = append(costs, cost{LimitNewSessions, ask.sender, l.starts.getOrPut(ask.sender, func() *bucket { return newBucket(l.limits.NewSessions) })})
		}
		if l.startsAll != nil {
			// Keyed by the session: each refused session's sender is
			// told once a window.
			costs = append(costs, cost{LimitNewSessionsGlobal, ask.session, l.startsAll})
		}
	}
	var refused *refusal
	for _, c := range costs {
		wait := c.b.wait(now)
		if wait == 0 {
			continue
		}
		if refused == nil {
			refused = &refusal{limit: c.limit, key: c.key}
		}
		refused.retryAfter = max(refused.retryAfter, wait)
	}
	if refused != nil {
		return nil, refused
	}
	let := make([]*bucket, len(costs))
	for i, c := range costs {
		c.b.pending++
		let[i] = c.b
	}
	return let, nil
}

// settle charges the buckets of an event Temporal took, and frees the
// tokens of one it did not.
func (l *Limiter) settle(let []*bucket, session string, accepted bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range let {
		b.pending--
		if accepted {
			// A reservation, not AllowN: two settled at once may take
			// the bucket below zero, and the next message waits for it.
			b.tokens.ReserveN(now, 1)
		}
	}
	if accepted && l.recent != nil {
		l.recent.put(session, struct{}{})
	}
}

// refuse opens the refused key's quiet window if none is open, warning
// and notifying once per window, and returns the adapters' error.
func (l *Limiter) refuse(r refusal, in pipeline.Inbound) error {
	now := l.now()
	l.mu.Lock()
	window := r.limit + "\x00" + r.key
	until, open := l.windows.get(window)
	opened := !open || !now.Before(until)
	if opened {
		l.windows.put(window, now.Add(NoticeWindow))
	}
	warn, quiet := opened, 0
	if r.limit == LimitNewSessionsGlobal {
		warn, quiet = l.startsWarning(now)
	}
	notifier := l.notifier
	notify := opened && notifier != nil && notifier.CanNotify(in.Channel) && l.notices.AllowN(now, 1)
	l.mu.Unlock()

	if warn {
		fields := []any{"channel", in.Channel, "sender", in.SenderID, "session", l.sessionOf(in).WorkflowID(),
			"limit", r.limit, "retry_after", r.retryAfter.Round(time.Millisecond), "quiet_for", NoticeWindow}
		if r.limit == LimitNewSessionsGlobal {
			fields = append(fields, "refused_since_last_warning", quiet)
		}
		l.logger.Warn("Inbound rate limit reached: messages over it are dropped, not handed to Temporal; the sender is told once, and further drops are not logged for a while (REPLYFLOW_RATE_*)", fields...)
	}
	if notify {
		l.sending.Add(1)
		go func() {
			defer l.sending.Done()
			ctx, cancel := context.WithTimeout(context.Background(), NoticeTimeout)
			defer cancel()
			if err := notifier.Notify(ctx, in, adapters.SlowDownNotice); err != nil {
				l.logger.Info("Slow-down notice not sent to a rate-limited sender", "channel", in.Channel, "sender", in.SenderID,
					"session", in.Session().WorkflowID(), "error", err)
			}
		}()
	}
	return &adapters.RateLimitedError{Limit: r.limit, RetryAfter: r.retryAfter}
}

// startsWarning says whether a refusal by the new-session ceiling is
// warned about: once per window for the gateway (it is one bucket, and a Warn per
// stranger would let a flood flood the log too), with how many were
// refused quietly since the last warning. l.mu is held.
func (l *Limiter) startsWarning(now time.Time) (bool, int) {
	if now.Before(l.startsWarnUntil) {
		l.startsQuiet++
		return false, 0
	}
	quiet := l.startsQuiet
	l.startsWarnUntil, l.startsQuiet = now.Add(NoticeWindow), 0
	return true, quiet
}
