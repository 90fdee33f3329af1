package discord

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/members"
	"github.com/replyflow/replyflow/pipeline"
)

// tuning are the receiver's timings and bounds; tests shorten them.
type tuning struct {
	// acceptDeadline is how long one event is retried in memory before
	// the receiver gives up on it: a message is then left to a fetch of
	// its channel's history (Discord never redelivers an event, but keeps
	// the messages), a reaction is lost (logged).
	acceptDeadline time.Duration
	// acceptAttempt bounds one Sink.Accept.
	acceptAttempt time.Duration
	// retryFirst and retryLast bound the wait between two attempts, which
	// doubles from the first to the last.
	retryFirst, retryLast time.Duration
	// laneCapacity is how many events one channel's queue holds;
	// maxLanes how many channels have a queue (and a goroutine) at once;
	// enqueueWait the longest the gateway's reader waits for room before
	// it leaves a message to a history fetch. Discord's heartbeat is
	// 41 s: a reader held for seconds keeps its connection.
	laneCapacity int
	maxLanes     int
	enqueueWait  time.Duration
	// laneIdle ends a lane with nothing to do.
	laneIdle time.Duration
	// catchupHold is the longest live events wait after a READY for the
	// catch-up to queue what was missed before them (so a channel's
	// missed messages reach the session before the new ones).
	catchupHold time.Duration
	// catchupMargin is taken off a session's last inbound time before
	// its history is read: clocks differ, and a message is posted a
	// little before its session takes it.
	catchupMargin time.Duration
	// watchTick is how often the watchdog looks at the connection.
	watchTick time.Duration
	// drain is how long a stopping gateway lets queued events reach the
	// Sink.
	drain time.Duration
	// maxPresses bounds the button presses handled at once.
	maxPresses int
	// identifyBurst and identifyEvery are the identify budget's bucket:
	// its size, and how often it gains one IDENTIFY back.
	identifyBurst int
	identifyEvery time.Duration
}

func defaultTuning() tuning {
	return tuning{
		acceptDeadline: 5 * time.Minute,
		acceptAttempt:  10 * time.Second,
		retryFirst:     time.Second,
		retryLast:      30 * time.Second,
		laneCapacity:   256,
		maxLanes:       1024,
		enqueueWait:    2 * time.Second,
		laneIdle:       time.Minute,
		catchupHold:    30 * time.Second,
		catchupMargin:  time.Minute,
		watchTick:      time.Second,
		drain:          5 * time.Second,
		maxPresses:     64,
		identifyBurst:  10,
		identifyEvery:  16 * time.Minute,
	}
}

// Receiver turns gateway events into what the Sink takes: messages and
// reactions through one ordered queue per Discord channel, button
// presses at once (they must be answered within 3 s), and, after every
// READY, what the running sessions missed from the channels' history.
type Receiver struct {
	cfg     GatewayConfig
	tune    tuning
	session *discordgo.Session
	logger  *slog.Logger
	now     func() time.Time

	ctx    context.Context // the lanes' and presses': ends after the drain
	cancel context.CancelFunc

	bot     atomic.Pointer[string] // the bot's user ID, from READY
	places  *places
	members *members.Counter
	lanes   *lanes
	presses chan struct{}  // a slot per press being handled
	busy    sync.WaitGroup // presses and catch-ups in flight
}

func newReceiver(cfg GatewayConfig, tune tuning, s *discordgo.Session) *Receiver {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Receiver{
		cfg: cfg, tune: tune, session: s, logger: cfg.Logger, now: cfg.Now,
		ctx: ctx, cancel: cancel,
		places:  newPlaces(s),
		presses: make(chan struct{}, tune.maxPresses),
	}
	r.members = members.New(guildMembers(s), cfg.Now, true)
	r.lanes = newLanes(r)
	return r
}

func (r *Receiver) botID() string {
	if id := r.bot.Load(); id != nil {
		return *id
	}
	return ""
}

// onMessage queues a MESSAGE_CREATE in its channel's lane; it runs on
// discordgo's reader and waits at most enqueueWait.
func (r *Receiver) onMessage(m *discordgo.Message) {
	bot := r.botID()
	if m == nil || m.Author == nil || bot == "" || m.Author.ID == bot {
		return // the bot's own messages are skipped before they cost a queue slot
	}
	r.lanes.enqueue(m.ChannelID, item{msg: m, at: r.now()})
}

// onReaction queues a reaction on one of the bot's messages.
func (r *Receiver) onReaction(x Reaction) {
	bot := r.botID()
	if bot == "" || x.UserID == bot || (x.MessageAuthorID != "" && x.MessageAuthorID != bot) || r.cfg.Feedback == nil {
		return
	}
	r.lanes.enqueue(x.ChannelID, item{reaction: &x, at: r.now()})
}

// onInteraction handles a press on its own goroutine: it must be answered
// within 3 s, and no queue of messages may hold it up.
func (r *Receiver) onInteraction(ic *discordgo.Interaction) {
	at, start := r.now(), time.Now()
	select {
	case r.presses <- struct{}{}:
	default:
		r.logger.Warn("Discord button press not handled: too many presses at once; the presser sees it fail and can press again", "interaction", ic.ID)
		return
	}
	r.busy.Add(1)
	go func() {
		defer r.busy.Done()
		defer func() { <-r.presses }()
		r.handlePress(ic, at, start)
	}()
}

// handleItem hands one queued event to its sink.
func (r *Receiver) handleItem(l *lane, it item) {
	if it.reaction != nil {
		r.handleReaction(l, it)
		return
	}
	id := snowflakeValue(it.msg.ID)
	if id <= l.handedUpTo || r.lanes.fetchWillHand(l, id) {
		return // a history fetch handed it, or will
	}
	if !r.hand(l, it.msg, nil, it.at) && r.ctx.Err() == nil {
		r.logger.Error("Discord message not accepted in time; its channel's history is fetched again from it, until the sink takes it",
			"discord_channel", l.id, "message", it.msg.ID, "retried_for", r.tune.acceptDeadline)
		r.lanes.request(l, fetchRequest{after: id - 1, notBefore: time.Now().Add(r.tune.retryLast), why: "not accepted"})
	}
}

// hand hands one message to the Sink, retrying for acceptDeadline; place
// is the lane's when known (the REST history names no guild). It reports
// false only when the Sink never took it: a message it skips (the bot's
// own, a join) counts as handed.
func (r *Receiver) hand(l *lane, m *discordgo.Message, place *Place, at time.Time) bool {
	var ev *Event
	fields := []any{"discord_channel", l.id, "message", m.ID}
	ok, _ := r.retry(fields, func(ctx context.Context) error {
		if ev == nil {
			p, err := r.placeFor(ctx, l, m, place)
			if err != nil {
				return err
			}
			e := NormalizeMessage(r.botID(), m, p, at)
			if e.Inbound != nil && e.Inbound.ChatType != pipeline.ChatDirect && p.GuildID != "" {
				count, err := r.members.Count(ctx, p.GuildID)
				if err != nil {
					r.logger.Warn("Discord guild's member count unknown; its messages go on without it for a minute", "guild", p.GuildID, "error", err)
				}
				e.Inbound.Membership = count
			}
			ev = &e
		}
		if ev.Inbound == nil {
			r.logger.Debug("Discord message skipped", "discord_channel", l.id, "message", m.ID, "reason", ev.Skip)
			return nil
		}
		return handled(r.cfg.Sink.Accept(ctx, *ev.Inbound))
	})
	return ok
}

// handled is err, but nil for an event the gateway's rate limits dropped
// on purpose (adapters.RateLimitedError): it is not retried, and counts
// as handed on, so no history fetch brings it back.
func handled(err error) error {
	if _, limited := adapters.AsRateLimited(err); limited {
		return nil
	}
	return err
}

func (r *Receiver) placeFor(ctx context.Context, l *lane, m *discordgo.Message, known *Place) (Place, error) {
	if known != nil {
		return *known, nil
	}
	return r.places.ofEvent(ctx, l.id, m.GuildID)
}

func (r *Receiver) handleReaction(l *lane, it item) {
	x := *it.reaction
	var ev *Event
	fields := []any{"discord_channel", l.id, "reacted_message", x.MessageID, "user", x.UserID}
	ok, _ := r.retry(fields, func(ctx context.Context) error {
		if ev == nil {
			p, err := r.places.ofEvent(ctx, l.id, x.GuildID)
			if err != nil {
				return err
			}
			e := NormalizeReaction(r.botID(), x, p, it.at)
			ev = &e
		}
		if ev.Feedback == nil {
			r.logger.Debug("Discord reaction skipped", "discord_channel", l.id, "reacted_message", x.MessageID, "reason", ev.Skip)
			return nil
		}
		return handled(r.cfg.Feedback.Feedback(ctx, *ev.Feedback))
	})
	if !ok && r.ctx.Err() == nil {
		r.logger.Error("Discord reaction lost: the sink did not take it in time, and Discord keeps no history of reactions",
			append(fields, "retried_for", r.tune.acceptDeadline)...)
	}
}

// retry runs try until it succeeds, the receiver stops, or acceptDeadline
// passes, waiting between attempts (doubling from retryFirst to
// retryLast) and logging each failure. Each attempt gets acceptAttempt.
func (r *Receiver) retry(fields []any, try func(ctx context.Context) error) (bool, error) {
	start := time.Now()
	wait := r.tune.retryFirst
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(r.ctx, r.tune.acceptAttempt)
		err := try(ctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				r.logger.Info("Discord event accepted after retries", append(fields, "attempts", attempt)...)
			}
			return true, nil
		}
		if r.ctx.Err() != nil {
			r.logger.Error("Discord event not handed on: the gateway is stopping (a message is fetched again by the catch-up at the next start, if its session is running)",
				append(fields, "error", err)...)
			return false, err
		}
		if time.Since(start)+wait > r.tune.acceptDeadline {
			r.logger.Warn("Discord event not accepted; giving up on it", append(fields, "attempts", attempt, "error", err)...)
			return false, err
		}
		r.logger.Warn("Discord event not accepted; trying again", append(fields, "attempt", attempt, "next_in", wait, "error", err)...)
		select {
		case <-r.ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, r.tune.retryLast)
	}
}

// stop lets the queued events reach the Sink for up to drain, then ends
// every lane, press and catch-up; the gateway no longer reads by then.
func (r *Receiver) stop() {
	r.lanes.drain(r.tune.drain)
	r.cancel()
	r.lanes.wait()
	r.busy.Wait()
}
