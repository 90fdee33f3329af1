package slack

import (
	"cmp"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/lanes"
	"github.com/replyflow/replyflow/pipeline"
)

// Slack sends an unacked Socket Mode envelope again a few times and then
// gives up, so a message whose deliveries all met Temporal down (or no
// connection at all) exists after that only in the conversation's
// history. The catch-up fetches it from there, as Discord's does after a
// READY: the receiver keeps a cursor per conversation, the newest ts it
// got Temporal to accept there, and reads conversations.history (and
// conversations.replies of the conversation's active threads) above the
// cursor
//
//   - after every Socket Mode connection (Slack's hello), and
//   - after Temporal refused a message of the conversation, with a
//     backoff, until it takes them again,
//
// handing every message above the cursor to the Sink exactly as a live
// event; what the session already took, its dedupe by message ID drops.
// Each message of a page is read on its own (historyAPI): one slack-go
// cannot read goes through the salvage of a live message event, and one
// that cannot be read even so is skipped with a warning; the rest of the
// page is caught up.
//
// The cursors are this process's memory while it runs; what outlives it
// is in Temporal, where every gateway reads it: each session's
// ReplyflowLastInboundAt, when it last took a message, kept by
// visibility while the session runs and, once it closed (idle past its
// TTL), for the namespace's retention. A gateway that starts takes its
// first cursors from there, as Discord's catch-up does: for a
// conversation with a running session, when the earliest of them last
// took a message (else its start) less seedMargin, as the session drops
// what it already has; for one whose sessions all closed, when the last
// of them last took a message, with no margin, since a new session would
// take a copy as new. So after a restart a message Slack gave up on
// while no gateway was up is fetched in every conversation the bot had a
// session in within the retention; the first message of a conversation
// that never had one is not. With two gateways each catches up the
// conversations it knows; the copies are dropped by the session's
// dedupe.
//
// The catch-up runs in both modes: over Socket Mode after every hello
// too, and over the Events API (no connection to come back) at start and
// after refusals. Bounds (CatchupBounds) are settings: how far back, how
// many messages per conversation, how many conversations; in all at most
// their product.

// CatchupBounds bound one gateway's catch-up.
type CatchupBounds struct {
	// Conversations bounds the conversations with a cursor: past it the
	// one quiet the longest is forgotten (and not caught up). A
	// reconnection reads each one's history, one call each on Slack's
	// Tier 3 (about 50 a minute, shared with the workers' lookups).
	Conversations int
	// Limit bounds the messages one conversation's catch-up hands on:
	// history reads newest first, so past it the oldest missed messages
	// are not fetched, and a warning says so.
	Limit int
	// MaxAge bounds the age of the messages fetched: a message older
	// than that is not answered now.
	MaxAge time.Duration
}

// DefaultCatchupBounds are the bounds of a receiver given none.
var DefaultCatchupBounds = CatchupBounds{Conversations: 200, Limit: 100, MaxAge: 24 * time.Hour}

func (b CatchupBounds) orDefault() CatchupBounds {
	d := DefaultCatchupBounds
	if b.Conversations > 0 {
		d.Conversations = b.Conversations
	}
	if b.Limit > 0 {
		d.Limit = b.Limit
	}
	if b.MaxAge > 0 {
		d.MaxAge = b.MaxAge
	}
	return d
}

const (
	// CatchupThreads bounds the threads of a conversation read with
	// conversations.replies: the most recent in which a reply was seen.
	// A reply in a thread the receiver saw no reply in yet, lost to
	// Slack's giving up, is not fetched.
	CatchupThreads  = 3
	catchupPageSize = 100
)

// seedMargin is taken off a running session's last message when it
// seeds a cursor: the session's clock and Slack's differ a little, and a
// message fetched twice is dropped by the session's dedupe.
const seedMargin = time.Minute

// catchupTune are the catch-up's timings; tests shorten them.
type catchupTune struct {
	// retryFirst and retryLast bound the backoff of a catch-up that did
	// not get through (Temporal or Slack down), doubling from the first.
	retryFirst, retryLast time.Duration
}

var defaultCatchupTune = catchupTune{retryFirst: time.Second, retryLast: 30 * time.Second}

// conversation is one conversation's cursor.
type conversation struct {
	channel, team string
	direct        bool
	// after is the ts at and below which every message is accepted, or
	// was not fetched; "" for none yet.
	after string
	// behind: there may be messages above after that Temporal has not
	// taken (a refusal, or a reconnection).
	behind bool
	// refusals counts the refusals noted (and the seed's lowering of
	// after), so that a catch-up that ran meanwhile does not move after
	// past a message still owed.
	refusals uint64
	threads  []string // active threads' ts, most recent first
}

// catchup holds the cursors and runs the catch-ups of one Socket Mode
// receiver.
type catchup struct {
	r      *Receiver
	api    historyAPI
	work   *lanes.Lanes
	tune   catchupTune
	bounds CatchupBounds
	// wake asks the loop for a round: true at once (a reconnection),
	// false after the backoff (a refusal).
	wake chan bool

	mu    sync.Mutex
	convs map[string]*list.Element // of *conversation, by channel ID
	order *list.List               // most recently active first
}

func newCatchup(r *Receiver, api historyAPI, work *lanes.Lanes, bounds CatchupBounds) *catchup {
	tune := r.catchupTune
	if tune.retryFirst <= 0 {
		tune = defaultCatchupTune
	}
	return &catchup{r: r, api: api, work: work, tune: tune, bounds: bounds.orDefault(), wake: make(chan bool, 1),
		convs: map[string]*list.Element{}, order: list.New()}
}

// start runs the catch-up until ctx is done: its rounds, and the seeding
// of its cursors from sessions (when given) of team. The returned wait
// returns once both ended.
func (c *catchup) start(ctx context.Context, sessions adapters.SessionLister, team string) (wait func()) {
	c.r.catchup.Store(c)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		c.run(ctx)
	}()
	seeded := make(chan struct{})
	go func() {
		defer close(seeded)
		if sessions != nil && team != "" {
			c.seed(ctx, sessions, team)
		}
	}()
	return func() {
		<-seeded
		<-ran
		c.r.catchup.Store(nil)
	}
}

// noted records the outcome of a live message's hand-off: accepted moves
// the cursor up to it unless a catch-up is owed; refused puts the cursor
// below it and asks for a catch-up after the backoff.
func (c *catchup) noted(in pipeline.Inbound, accepted bool) {
	c.mu.Lock()
	conv := c.conversationLocked(in)
	if in.ReplyTo != "" {
		conv.threads = slices.Insert(slices.DeleteFunc(conv.threads, func(t string) bool { return t == in.ReplyTo }), 0, in.ReplyTo)
		conv.threads = conv.threads[:min(len(conv.threads), CatchupThreads)]
	}
	if accepted {
		if !conv.behind {
			conv.after = newerTS(conv.after, in.MessageID)
		}
		c.mu.Unlock()
		return
	}
	if before := tsBefore(in.MessageID); conv.after == "" || tsValue(before) < tsValue(conv.after) {
		conv.after = before
	}
	conv.behind = true
	conv.refusals++
	c.mu.Unlock()
	c.ask(false)
}

// conversationLocked is in's conversation, made (forgetting the one quiet
// the longest past the bound) when new, and marked the most recently
// active. c.mu is held.
func (c *catchup) conversationLocked(in pipeline.Inbound) *conversation {
	if e, ok := c.convs[in.ChatID]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*conversation)
	}
	if c.order.Len() >= c.bounds.Conversations {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.convs, oldest.Value.(*conversation).channel)
	}
	conv := &conversation{channel: in.ChatID, team: in.Account, direct: in.ChatType == pipeline.ChatDirect}
	c.convs[in.ChatID] = c.order.PushFront(conv)
	return conv
}

// seed takes cursors from the Slack sessions of team, running and closed
// within MaxAge, listed through sessions (retried with the backoff while
// Temporal does not answer), the most recently active first within the
// bound, lowering the cursor of one a live message made meanwhile; then
// it asks for a round.
func (c *catchup) seed(ctx context.Context, sessions adapters.SessionLister, team string) {
	var open, closed []adapters.OpenSession
	closedLister, _ := sessions.(adapters.ClosedSessionLister)
	for backoff := time.Duration(0); ; {
		var err error
		if open, err = sessions.OpenSessions(ctx, Channel); err == nil && closedLister != nil {
			closed, err = closedLister.ClosedSessions(ctx, Channel, c.r.cfg.Now().Add(-c.bounds.MaxAge))
		}
		if err == nil {
			break
		}
		backoff = min(max(2*backoff, c.tune.retryFirst), c.tune.retryLast)
		c.r.logger.Warn("Slack catch-up cannot list the sessions yet; trying again", "next_in", backoff, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	since := adapters.CatchupCursors(open, closed, team, seedMargin)
	channels := adapters.MostRecent(since, c.bounds.Conversations)
	c.mu.Lock()
	seeded := 0
	for i := len(channels) - 1; i >= 0; i-- { // the most recently active ends in front
		channel := channels[i]
		at := slackTS(since[channel])
		if e, known := c.convs[channel]; known {
			// A live message came first: what came before it, since the
			// session's cursor, may be missing still. The count makes a
			// round that began before this one fetch again.
			conv := e.Value.(*conversation)
			if tsValue(at) < tsValue(conv.after) {
				conv.after = at
			}
			conv.behind = true
			conv.refusals++
			seeded++
			continue
		}
		conv := c.conversationLocked(pipeline.Inbound{ChatID: channel, Account: team, ChatType: chatTypeOf(channel)})
		conv.after, conv.behind = at, true
		seeded++
	}
	c.mu.Unlock()
	c.r.logger.Info("Slack catch-up after the gateway started: the conversations of the running and lately closed sessions fetch what they missed",
		"running", len(open), "closed", len(closed), "conversations", seeded, "max_age", c.bounds.MaxAge, "limit_per_conversation", c.bounds.Limit)
	if seeded > 0 {
		c.ask(true)
	}
}

// chatTypeOf: direct message IDs start with D.
func chatTypeOf(channel string) pipeline.ChatType {
	if strings.HasPrefix(channel, "D") {
		return pipeline.ChatDirect
	}
	return pipeline.ChatGroup
}

// reconnected marks every conversation behind and asks for a round now:
// what Slack gave up sending while no connection was up is in history.
func (c *catchup) reconnected() {
	c.mu.Lock()
	n := c.order.Len()
	for e := c.order.Front(); e != nil; e = e.Next() {
		e.Value.(*conversation).behind = true
	}
	c.mu.Unlock()
	if n > 0 {
		c.ask(true)
	}
}

func (c *catchup) ask(now bool) {
	for {
		select {
		case c.wake <- now:
			return
		default:
		}
		select {
		case prev := <-c.wake:
			now = now || prev // keep the more urgent of the two
		default:
		}
	}
}

// run runs rounds when asked until ctx is done: at once after a
// reconnection, after the backoff after a refusal, and again with the
// backoff doubled while a round does not get through.
func (c *catchup) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	scheduled, backoff := false, time.Duration(0)
	schedule := func(d time.Duration) {
		timer.Stop()
		timer.Reset(d)
		scheduled = true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-c.wake:
			if now {
				backoff = 0
				schedule(0)
			} else if !scheduled {
				schedule(c.tune.retryFirst)
			}
			continue
		case <-timer.C:
		}
		scheduled = false
		wait, done := c.round(ctx)
		if done || ctx.Err() != nil {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, c.tune.retryFirst), c.tune.retryLast)
		schedule(max(backoff, wait))
	}
}

// round catches up every conversation behind, the most recently active
// first, each on its Socket Mode lane (so that its missed messages reach
// Temporal in order with the live ones queued behind). It stops at the
// first that does not get through: Temporal or Slack is down for all.
// wait is how long Slack asked to wait, when it did.
func (c *catchup) round(ctx context.Context) (wait time.Duration, done bool) {
	c.mu.Lock()
	var behind []string
	for e := c.order.Front(); e != nil; e = e.Next() {
		if conv := e.Value.(*conversation); conv.behind {
			behind = append(behind, conv.channel)
		}
	}
	c.mu.Unlock()
	for _, channel := range behind {
		result := make(chan error, 1)
		if err := c.work.Go(ctx, channel, func() { result <- c.catchUp(ctx, channel) }); err != nil {
			return 0, false
		}
		var err error
		select {
		case err = <-result:
		case <-ctx.Done():
			return 0, false
		}
		if err != nil {
			var limited *slack.RateLimitedError
			if errors.As(err, &limited) {
				wait = limited.RetryAfter
			}
			if ctx.Err() == nil {
				c.r.logger.Warn("Slack catch-up did not get through; trying again after a backoff",
					"slack_channel", channel, "conversations_behind", len(behind), "error", err)
			}
			return wait, false
		}
	}
	return 0, true
}

// catchUp hands channel's messages above its cursor to the Sink, oldest
// first. An answer of Slack that no retry changes (missing_scope,
// not_in_channel, channel_not_found) ends the conversation's catch-up
// with an error in the log.
func (c *catchup) catchUp(ctx context.Context, channel string) error {
	c.mu.Lock()
	e, ok := c.convs[channel]
	if !ok || !e.Value.(*conversation).behind {
		c.mu.Unlock()
		return nil
	}
	conv := *e.Value.(*conversation)
	conv.threads = slices.Clone(conv.threads)
	c.mu.Unlock()

	oldest := conv.after
	if floor := slackTS(c.r.cfg.Now().Add(-c.bounds.MaxAge)); tsValue(oldest) < tsValue(floor) {
		oldest = floor
	}
	msgs, err := c.fetch(ctx, conv, oldest)
	var refused slack.SlackErrorResponse
	if errors.As(err, &refused) {
		c.forget(channel, conv.refusals)
		if refused.Err == "channel_not_found" || refused.Err == "not_in_channel" {
			c.r.logger.Warn("Slack catch-up skipped a conversation the bot is no longer in", "team", conv.team, "slack_channel", channel, "error", err)
			return nil
		}
		c.r.logger.Error("Slack catch-up of a conversation refused by Slack: messages Slack stopped redelivering there are not fetched (the bot needs channels:history, groups:history, im:history, mpim:history)",
			"team", conv.team, "slack_channel", channel, "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	handed := 0
	for _, m := range msgs {
		ev := c.event(conv, m)
		if err := c.r.deliver(ctx, ev, "catch-up message "+m.Timestamp); err != nil {
			return err
		}
		c.advance(channel, conv.refusals, m.Timestamp)
		if ev.Inbound != nil {
			handed++
		}
	}
	c.caughtUp(channel, conv.refusals)
	if handed > 0 {
		c.r.logger.Info("Slack conversation history handed on: messages Temporal had not taken", "team", conv.team, "slack_channel", channel, "messages", handed)
	}
	return nil
}

// fetch reads conv's messages above oldest: its history, newest first
// up to the Limit, and one page of each active thread's replies;
// deduplicated by ts, the newest Limit of them, oldest first.
func (c *catchup) fetch(ctx context.Context, conv conversation, oldest string) ([]slack.Message, error) {
	byTS := map[string]slack.Message{}
	keep := func(ms []slack.Message) {
		for _, m := range ms {
			if tsValue(m.Timestamp) > tsValue(oldest) {
				byTS[m.Timestamp] = m
			}
		}
	}
	cursor, more := "", false
	for read := 0; ; {
		resp, err := c.api.history(ctx, conv.channel, oldest, cursor, min(catchupPageSize, c.bounds.Limit-read))
		if err != nil {
			return nil, fmt.Errorf("read the history of Slack channel %s (team %s) since %s: %w", conv.channel, conv.team, oldest, err)
		}
		keep(c.messages(conv, resp.Messages))
		read += len(resp.Messages)
		cursor = resp.ResponseMetadata.Cursor
		if more = resp.HasMore && cursor != ""; !more || read >= c.bounds.Limit || len(resp.Messages) == 0 {
			break
		}
	}
	for _, thread := range conv.threads {
		replies, err := c.api.replies(ctx, conv.channel, thread, oldest, min(catchupPageSize, c.bounds.Limit))
		if err != nil {
			var refused slack.SlackErrorResponse
			if errors.As(err, &refused) {
				continue // the thread is gone; the others are read
			}
			return nil, fmt.Errorf("read the replies of thread %s in Slack channel %s (team %s): %w", thread, conv.channel, conv.team, err)
		}
		keep(c.messages(conv, replies.Messages))
	}
	out := make([]slack.Message, 0, len(byTS))
	for _, m := range byTS {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b slack.Message) int { return cmp.Compare(tsValue(a.Timestamp), tsValue(b.Timestamp)) })
	if over := len(out) - c.bounds.Limit; over > 0 || more {
		out = out[max(over, 0):]
		c.r.logger.Warn("Slack catch-up stopped at its bound: the oldest messages above the cursor are not fetched (REPLYFLOW_SLACK_CATCHUP_LIMIT)",
			"team", conv.team, "slack_channel", conv.channel, "limit", c.bounds.Limit)
	}
	return out, nil
}

// messages decodes each message of a page on its own, so that one
// slack-go cannot read costs no other: it goes through the salvage of a
// live message event (salvageMessage), and one that cannot be read even
// so is skipped with a warning. The log names the message by its ts,
// never its text.
func (c *catchup) messages(conv conversation, page []json.RawMessage) []slack.Message {
	out := make([]slack.Message, 0, len(page))
	for _, raw := range page {
		m, salvaged, err := decodeMessage(raw)
		if err != nil {
			c.r.logger.Warn("Slack catch-up skipped a message it cannot read; the others of the page are caught up",
				"team", conv.team, "slack_channel", conv.channel, "ts", tsForLog(raw), "error", err)
			continue
		}
		if salvaged != nil {
			c.r.logger.Warn("Slack catch-up read a message without the fields slack-go could not read; it goes on",
				"team", conv.team, "slack_channel", conv.channel, "ts", m.Timestamp, "files_left_out", salvaged.FilesLeftOut, "error", salvaged.Cause)
		}
		out = append(out, m)
	}
	return out
}

// event is a fetched message as its live message event would be.
func (c *catchup) event(conv conversation, m slack.Message) Event {
	channelType := ChannelPublic
	if conv.direct {
		channelType = ChannelIM
	}
	msg := m.Msg
	ev := &slackevents.MessageEvent{Type: "message", Channel: conv.channel, ChannelType: channelType,
		SubType: m.SubType, BotID: m.BotID, Message: &msg}
	return messageEvent(c.r.cfg.Bot, c.r.cfg.Mode, conv.team, ev, c.r.cfg.Now())
}

// advance moves channel's cursor up to ts unless a refusal was noted since
// the catch-up began.
func (c *catchup) advance(channel string, refusals uint64, ts string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.convs[channel]; ok {
		if conv := e.Value.(*conversation); conv.refusals == refusals {
			conv.after = newerTS(conv.after, ts)
		}
	}
}

// caughtUp ends channel's owed catch-up unless a refusal was noted since
// it began (then another round fetches again).
func (c *catchup) caughtUp(channel string, refusals uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.convs[channel]; ok {
		if conv := e.Value.(*conversation); conv.refusals == refusals {
			conv.behind = false
		}
	}
}

// forget drops channel's cursor unless a refusal was noted since the
// catch-up began: Slack will not let it be read, and a live message
// makes it again.
func (c *catchup) forget(channel string, refusals uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.convs[channel]; ok && e.Value.(*conversation).refusals == refusals {
		c.order.Remove(e)
		delete(c.convs, channel)
	}
}

// tsValue reads a Slack ts ("1700000000.000100") as microseconds; 0 for
// "" or one that is not a ts.
func tsValue(ts string) int64 {
	sec, micro, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0
	}
	m, _ := strconv.ParseInt((micro + "000000")[:6], 10, 64)
	return s*1_000_000 + m
}

// tsBefore is the ts just before ts, so that a fetch above it includes ts.
func tsBefore(ts string) string {
	v := tsValue(ts)
	if v <= 0 {
		return ""
	}
	v--
	return fmt.Sprintf("%d.%06d", v/1_000_000, v%1_000_000)
}

func newerTS(a, b string) string {
	if tsValue(b) > tsValue(a) {
		return b
	}
	return a
}

// tsTime is when Slack says the message of ts was posted; zero for one
// that is not a ts.
func tsTime(ts string) time.Time {
	v := tsValue(ts)
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(v)
}
