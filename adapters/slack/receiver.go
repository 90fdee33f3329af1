package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/members"
	"github.com/replyflow/replyflow/pipeline"
)

// ReceiverConfig configures the inbound side, shared by the Events API
// handlers and the Socket Mode receiver.
type ReceiverConfig struct {
	// Bot is who the bot is, from auth.test: its own messages are skipped
	// and its mentions addressed to it.
	Bot  Identity
	Mode ReplyMode
	Sink adapters.Sink
	// Feedback records reactions on messages; nil ignores them.
	Feedback adapters.FeedbackSink
	Logger   *slog.Logger
	// Now is the clock messages are stamped with; time.Now when nil.
	Now func() time.Time
	// CountMembers, when set, is asked (at most once a minute per
	// channel) for a channel's members, which go with its messages to
	// the engagement rules; ConversationMembers is Slack's.
	CountMembers func(ctx context.Context, channel string) (int, error)
}

// Receiver hands Slack events to the Sink.
type Receiver struct {
	cfg     ReceiverConfig
	logger  *slog.Logger
	members *members.Counter // nil without CountMembers
	// catchup is the Socket Mode receiver's, while it runs; nil in
	// events mode.
	catchup     atomic.Pointer[catchup]
	catchupTune catchupTune
}

// NewReceiver checks the config and returns the receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Sink == nil {
		return nil, errors.New("slack receiver: no sink")
	}
	if cfg.Bot.UserID == "" {
		return nil, errors.New("slack receiver: the bot's user ID is unknown (ask auth.test first)")
	}
	if cfg.Mode == "" {
		cfg.Mode = ReplyThreaded
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Receiver{cfg: cfg, logger: cfg.Logger.With("channel", Channel, "bot", cfg.Bot.UserID)}
	if cfg.CountMembers != nil {
		r.members = members.New(cfg.CountMembers, cfg.Now, false)
	}
	return r, nil
}

// errNotAccepted wraps a Sink failure: the event must be delivered again,
// so it is neither acked nor answered 200. An event the gateway's rate
// limits dropped (adapters.RateLimitedError) is no failure: it is acked.
var errNotAccepted = errors.New("not accepted")

// HandleEvent hands one Events API event to the sink. It returns an error
// only when the sink did not accept it; an event that can never be used
// is logged and dropped.
func (r *Receiver) HandleEvent(ctx context.Context, ev slackevents.EventsAPIEvent) error {
	e := Normalize(r.cfg.Bot, r.cfg.Mode, ev, r.cfg.Now())
	err := r.deliver(ctx, e, eventID(ev))
	if c := r.catchup.Load(); c != nil && e.Inbound != nil && ctx.Err() == nil {
		c.noted(*e.Inbound, err == nil)
	}
	return err
}

// HandleInteraction hands one button press to the sink, as HandleEvent.
func (r *Receiver) HandleInteraction(ctx context.Context, cb slack.InteractionCallback) error {
	return r.deliver(ctx, NormalizeInteraction(r.cfg.Mode, cb, r.cfg.Now()), "interaction "+cb.TriggerID)
}

// AcceptTimeout bounds one hand-off to the sink. Slack gives up on an
// answer after 3 s and delivers again, so a longer wait only holds up the
// events behind it on a socket.
const AcceptTimeout = 10 * time.Second

func (r *Receiver) deliver(ctx context.Context, ev Event, what string) error {
	ctx, cancel := context.WithTimeout(ctx, AcceptTimeout)
	defer cancel()
	switch {
	case ev.Inbound != nil:
		in := *ev.Inbound
		r.countMembers(ctx, &in)
		if err := r.cfg.Sink.Accept(ctx, in); err != nil {
			if _, limited := adapters.AsRateLimited(err); limited {
				r.logger.Debug("Slack event dropped by the rate limits", "event", what, "team", in.Account, "slack_channel", in.ChatID)
				return nil // dropped on purpose: acked like an accepted one
			}
			return fmt.Errorf("%w: %s (team %s, channel %s, message %s): %v", errNotAccepted, what, in.Account, in.ChatID, in.MessageID, err)
		}
	case ev.Feedback != nil:
		f := *ev.Feedback
		if r.cfg.Feedback == nil {
			return nil
		}
		if err := r.cfg.Feedback.Feedback(ctx, f); err != nil {
			if _, limited := adapters.AsRateLimited(err); limited {
				return nil // dropped on purpose: acked like an accepted one
			}
			return fmt.Errorf("%w: reaction %s (team %s, channel %s, message %s): %v", errNotAccepted, what, f.Account, f.ChatID, f.MessageID, err)
		}
	default:
		r.logger.Debug("Slack event skipped", "event", what, "reason", ev.Skip)
	}
	return nil
}

// countMembers attaches the channel's member count to a channel
// message; a DM's two are known, and a count Slack would not give is left
// out (the session then counts who speaks).
func (r *Receiver) countMembers(ctx context.Context, in *pipeline.Inbound) {
	if r.members == nil || in.ChatType != pipeline.ChatGroup {
		return
	}
	count, err := r.members.Count(ctx, in.ChatID)
	if err != nil {
		r.logger.Warn("Slack channel's member count unknown; its messages go on without it for a minute (the bot needs channels:read, groups:read)",
			"team", in.Account, "slack_channel", in.ChatID, "error", err)
	}
	in.Membership = count
}

// warnSalvaged logs an event slack-go could not read whole, read after
// all without the fields it could not read (Salvage); nil logs nothing.
// It names the event and slack-go's error, never the message.
func (r *Receiver) warnSalvaged(s *Salvage, attrs ...any) {
	if s == nil {
		return
	}
	msg := "Slack event read without the fields slack-go could not read; it goes on"
	if s.FilesLeftOut {
		msg = "Slack event read without the fields slack-go could not read and without the files it could not read; it goes on"
	}
	r.logger.Warn(msg, append([]any{"type", s.Type, "event_id", s.EventID, "files_left_out", s.FilesLeftOut, "error", s.Cause}, attrs...)...)
}

func eventID(ev slackevents.EventsAPIEvent) string {
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" {
		return "event " + cb.EventID
	}
	return "event of type " + ev.Type
}
