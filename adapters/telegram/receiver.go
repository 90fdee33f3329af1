package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Update is one Bot API update.
type Update = models.Update

// AllowedUpdates are the update types the gateway asks Telegram for.
// message_reaction must be asked for by name: Telegram never sends it by
// default.
var AllowedUpdates = []string{"message", "edited_message", "callback_query", "message_reaction"}

// ReceiverConfig configures the inbound side.
type ReceiverConfig struct {
	Token      string
	APIURL     string // DefaultAPIURL when empty
	HTTPClient *http.Client
	Sink       adapters.Sink
	// Feedback records reactions on messages; nil ignores them.
	Feedback adapters.FeedbackSink
	Logger   *slog.Logger
	// Now is the clock messages are stamped with; time.Now when nil.
	Now func() time.Time
	// MaxAge (REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE): a message (or an edit
	// of one) sent longer ago than this when its update reaches the
	// gateway is left out: confirmed to Telegram, logged, not answered.
	// Zero leaves nothing out.
	MaxAge time.Duration
}

// Receiver turns updates into what the Sink takes, and answers button
// presses once they are accepted.
type Receiver struct {
	cfg    ReceiverConfig
	bot    *bot.Bot
	me     Identity
	logger *slog.Logger
}

// NewReceiver asks Telegram who the bot is (its username is what mentions
// address) and returns the receiver.
func NewReceiver(ctx context.Context, cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Sink == nil {
		return nil, errors.New("telegram receiver: no sink")
	}
	b, err := newBot(cfg.Token, cfg.APIURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	me, err := b.GetMe(ctx)
	if err != nil {
		return nil, fmt.Errorf("ask Telegram who the bot is (getMe): %w", classify("getMe", err))
	}
	r := &Receiver{cfg: cfg, bot: b, me: Identity{ID: me.ID, Username: me.Username}}
	r.logger = cfg.Logger.With("channel", Channel, "bot", me.Username)
	return r, nil
}

// Identity is who the bot is.
func (r *Receiver) Identity() Identity { return r.me }

// errNotAccepted wraps a Sink failure: the update must be offered again.
var errNotAccepted = errors.New("not accepted")

// Handle hands one update to the sink. It returns an error only when the
// sink did not accept it, so the caller must not confirm it to Telegram;
// an update that can never be used is logged and dropped, and so are an
// update the gateway's rate limits refused (adapters.RateLimitedError)
// and a message that reached the gateway more than MaxAge after it was
// sent (tooOld).
func (r *Receiver) Handle(ctx context.Context, u *Update) error {
	now := r.cfg.Now()
	ev := Normalize(r.me, u, now)
	switch {
	case ev.Inbound != nil:
		in := *ev.Inbound
		if r.tooOld(u, in, now) {
			return nil
		}
		if err := in.Validate(); err != nil {
			r.logger.Warn("Telegram message refused; it is dropped", "update_id", u.ID, "chat", in.ChatID, "message_id", in.MessageID, "reason", err)
			r.answer(ctx, ev.CallbackID, "That did not work: "+err.Error())
			return nil
		}
		if err := r.cfg.Sink.Accept(ctx, in); err != nil {
			if _, limited := adapters.AsRateLimited(err); limited {
				// Dropped on purpose: confirmed to Telegram like an
				// accepted update, and the press answered.
				r.logger.Debug("Telegram update dropped by the rate limits", "update_id", u.ID, "chat", in.ChatID, "message_id", in.MessageID)
				r.answer(ctx, ev.CallbackID, adapters.SlowDownNotice)
				return nil
			}
			return fmt.Errorf("%w: update %d (chat %s, message %s): %v", errNotAccepted, u.ID, in.ChatID, in.MessageID, err)
		}
		r.answer(ctx, ev.CallbackID, "")
	case ev.Feedback != nil:
		f := *ev.Feedback
		if r.cfg.Feedback == nil {
			return nil
		}
		if err := f.Validate(); err != nil {
			r.logger.Warn("Telegram reaction refused; it is dropped", "update_id", u.ID, "chat", f.ChatID, "message_id", f.MessageID, "reason", err)
			return nil
		}
		if err := r.cfg.Feedback.Feedback(ctx, f); err != nil {
			if _, limited := adapters.AsRateLimited(err); limited {
				return nil // dropped on purpose, confirmed like an accepted one
			}
			return fmt.Errorf("%w: reaction update %d (chat %s, message %s): %v", errNotAccepted, u.ID, f.ChatID, f.MessageID, err)
		}
	default:
		r.logger.Debug("Telegram update skipped", "update_id", u.ID, "reason", ev.Skip)
		r.answer(ctx, ev.CallbackID, "")
	}
	return nil
}

// tooOld reports, and logs, a message whose update reached the gateway
// more than MaxAge after it was made: Telegram kept it while no gateway
// ran (it keeps updates 24 hours, in both modes), and an answer so late
// would be more confusing than none. An edit's update is made when the
// edit is, whatever the message's age. The log names the chat and the
// message, never the text. A button press is never too old: it is
// answered, or refused, by the session.
func (r *Receiver) tooOld(u *Update, in pipeline.Inbound, now time.Time) bool {
	var date int
	switch {
	case u.Message != nil:
		date = u.Message.Date
	case u.EditedMessage != nil:
		date = u.EditedMessage.EditDate
		if date <= 0 {
			date = u.EditedMessage.Date
		}
	}
	if r.cfg.MaxAge <= 0 || date <= 0 || in.Action != "" {
		return false
	}
	made := time.Unix(int64(date), 0)
	age := now.Sub(made)
	if age <= r.cfg.MaxAge {
		return false
	}
	r.logger.Warn("Telegram message left out, not answered: it reached the gateway longer after it was sent than REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE (Telegram kept it while no gateway ran); raise REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE (at most 24h) to answer such messages",
		"update_id", u.ID, "chat", in.ChatID, "message_id", in.MessageID, "sent_at", made.UTC().Format(time.RFC3339), "age", age.Round(time.Second).String(), "max_age", r.cfg.MaxAge.String())
	return true
}

// answer stops the spinner on a pressed button. Telegram allows one
// answer per press and expires them quickly, so a failure is only logged.
func (r *Receiver) answer(ctx context.Context, callbackID, text string) {
	if callbackID == "" {
		return
	}
	if _, err := r.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: callbackID, Text: text}); err != nil {
		r.logger.Debug("Button press not answered", "callback_id", callbackID, "error", err)
	}
}

// Notify sends text as a plain message in in's chat, in its forum topic
// and as a reply to in's message when it has them: the gateway's
// slow-down notice (adapters.Serving.Notify).
func (r *Receiver) Notify(ctx context.Context, in pipeline.Inbound, text string) error {
	chat, err := strconv.ParseInt(in.ChatID, 10, 64)
	if err != nil {
		return fmt.Errorf("notify: %q is not a Telegram chat ID", in.ChatID)
	}
	params := &bot.SendMessageParams{ChatID: chat, Text: text}
	if topic, ok := topicOf(in.ThreadID); ok {
		params.MessageThreadID = topic
	}
	if id, err := strconv.Atoi(in.MessageID); err == nil && id > 0 && in.Action == "" {
		params.ReplyParameters = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
	}
	if _, err := r.bot.SendMessage(ctx, params); err != nil {
		return classify("sendMessage", err)
	}
	return nil
}
