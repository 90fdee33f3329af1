package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/connect"
	"github.com/replyflow/replyflow/pipeline"
)

// Platform registers Telegram with the replyflow commands (see package
// gateway); its fields are the REPLYFLOW_TELEGRAM_* settings.
type Platform struct {
	// Token (from BotFather) turns Telegram on; keep it secret.
	Token          string            `envconfig:"TELEGRAM_TOKEN"`
	Mode           string            `envconfig:"TELEGRAM_MODE" default:"polling"`
	WebhookURL     string            `envconfig:"TELEGRAM_WEBHOOK_URL"`
	WebhookPath    string            `envconfig:"TELEGRAM_WEBHOOK_PATH" default:"/telegram/webhook"`
	WebhookSecret  string            `envconfig:"TELEGRAM_WEBHOOK_SECRET"`
	APIURL         string            `envconfig:"TELEGRAM_API_URL" default:"https://api.telegram.org"`
	Emoji          map[string]string `envconfig:"TELEGRAM_EMOJI"`
	Pace           time.Duration     `envconfig:"TELEGRAM_PACE" default:"1s"`
	GroupPerMinute int               `envconfig:"TELEGRAM_GROUP_PER_MINUTE" default:"20"`
	BotPerSecond   int               `envconfig:"TELEGRAM_BOT_PER_SECOND" default:"30"`
	// CatchupMaxAge: a message sent longer ago than this when its update
	// reaches the gateway (kept by Telegram while no gateway ran) is left
	// out, not answered (ReceiverConfig.MaxAge).
	CatchupMaxAge time.Duration `envconfig:"TELEGRAM_CATCHUP_MAX_AGE" default:"24h"`
}

// Bounds of REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE: Telegram keeps an update
// 24 hours at most, so a longer one would never apply; below a minute,
// Telegram's whole-second dates and a clock a little off would leave out
// messages sent just now.
const (
	MinCatchupMaxAge = time.Minute
	MaxCatchupMaxAge = 24 * time.Hour
)

var (
	_ adapters.Platform = (*Platform)(nil)
	_ adapters.Chunker  = (*Platform)(nil)
)

// ChunkLimit is Telegram's message limit.
func (p *Platform) ChunkLimit() int { return MessageLimit }

// Chunk cuts with pipeline.Chunk: RenderHTML never lengthens the visible
// text, so a chunk cut to limit in Markdown fits once rendered.
func (p *Platform) Chunk(markdown string, limit int) []string { return pipeline.Chunk(markdown, limit) }

// Telegram's rule for a webhook's secret token.
var webhookSecretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (p *Platform) Channel() string     { return Channel }
func (p *Platform) Enabled() bool       { return p.Token != "" }
func (p *Platform) HowToEnable() string { return "REPLYFLOW_TELEGRAM_TOKEN" }

func (p *Platform) Summary() string { return fmt.Sprintf("on (%s); message your bot", p.Mode) }

func (p *Platform) Validate() []error {
	if !p.Enabled() {
		return nil
	}
	var errs []error
	if _, err := BotID(p.Token); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_TOKEN: %w", err))
	}
	switch p.Mode {
	case "polling":
	case "webhook":
		if !webhookSecretPattern.MatchString(p.WebhookSecret) {
			errs = append(errs, errors.New("REPLYFLOW_TELEGRAM_WEBHOOK_SECRET is required in webhook mode: 1 to 256 of A-Z a-z 0-9 _ -"))
		}
		if len(p.WebhookPath) < 2 || p.WebhookPath[0] != '/' {
			errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_WEBHOOK_PATH must be a path like /telegram/webhook, got %q", p.WebhookPath))
		}
	default:
		errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_MODE must be polling or webhook, got %q", p.Mode))
	}
	if p.Pace < 0 || p.GroupPerMinute < 0 || p.BotPerSecond < 0 {
		errs = append(errs, errors.New("REPLYFLOW_TELEGRAM_PACE, REPLYFLOW_TELEGRAM_GROUP_PER_MINUTE and REPLYFLOW_TELEGRAM_BOT_PER_SECOND must not be negative"))
	}
	if p.CatchupMaxAge < MinCatchupMaxAge || p.CatchupMaxAge > MaxCatchupMaxAge {
		errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE must be from %s to %s (Telegram keeps updates 24h), got %s", MinCatchupMaxAge, MaxCatchupMaxAge, p.CatchupMaxAge))
	}
	_, bad := adapters.ReactionOverrides("REPLYFLOW_TELEGRAM_EMOJI", p.Emoji, nil)
	return append(errs, bad...)
}

// Outbound is the worker's Telegram client; reply anchors resolve through
// w.IDs.
func (p *Platform) Outbound(w adapters.WorkerSide) (adapters.Outbound, error) {
	emoji, _ := adapters.ReactionOverrides("REPLYFLOW_TELEGRAM_EMOJI", p.Emoji, nil) // Validate reported the bad ones
	return NewClient(ClientConfig{
		Token:   p.Token,
		APIURL:  p.APIURL,
		Anchors: w.IDs,
		Emoji:   emoji,
		Pacing:  Pacing{PerChat: p.Pace, GroupPerMinute: p.GroupPerMinute, BotPerSecond: p.BotPerSecond},
		Logger:  w.Logger,
	})
}

// Serve connects the gateway to Telegram in the background, so that
// Telegram being unreachable never holds up the other platforms: it asks
// who the bot is until Telegram answers, then in webhook mode serves the
// webhook it mounted on the gateway's mux (and registers it when
// REPLYFLOW_TELEGRAM_WEBHOOK_URL is set), in polling mode polls until ctx
// is done. Serving.Failed reports a refusal no retry can fix (a wrong
// token).
func (p *Platform) Serve(ctx context.Context, gw adapters.GatewaySide) (adapters.Serving, error) {
	failed := make(chan error, 1)
	var webhook atomic.Pointer[http.Handler]
	if p.Mode == "webhook" {
		gw.WebhookMux().Handle("POST "+p.WebhookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := webhook.Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			http.Error(w, "the gateway is not connected to Telegram yet; deliver the update again", http.StatusServiceUnavailable)
		}))
	}
	gw.Health.Report(Channel, adapters.Health{State: adapters.StateConnecting})
	var connected atomic.Pointer[Receiver]
	go func() {
		err := p.run(ctx, gw, &connected, func(h http.Handler) { webhook.Store(&h) })
		if err != nil && ctx.Err() == nil {
			gw.Health.Report(Channel, adapters.Health{State: adapters.StateFailed, Error: err.Error()})
			failed <- err
		}
	}()
	notify := func(ctx context.Context, in pipeline.Inbound, text string) error {
		rcv := connected.Load()
		if rcv == nil {
			return errors.New("telegram is not connected yet")
		}
		return rcv.Notify(ctx, in, text)
	}
	return adapters.Serving{Failed: failed, Notify: notify}, nil
}

func (p *Platform) run(ctx context.Context, gw adapters.GatewaySide, connected *atomic.Pointer[Receiver], serveWebhook func(http.Handler)) error {
	var rcv *Receiver
	err := untilConnected(ctx, "ask Telegram who the bot is (getMe)", gw, func() (err error) {
		rcv, err = NewReceiver(ctx, ReceiverConfig{
			Token: p.Token, APIURL: p.APIURL, Sink: gw.Sink, Feedback: gw.Feedback, Logger: gw.Logger,
			MaxAge: p.CatchupMaxAge,
		})
		return err
	})
	if err != nil {
		return err
	}
	connected.Store(rcv)
	if p.Mode == "polling" {
		gw.Health.Report(Channel, adapters.Health{State: adapters.StateUp})
		gw.Logger.Info("Telegram connected", "mode", "polling", "bot", rcv.Identity().Username)
		return rcv.Poll(ctx)
	}
	serveWebhook(rcv.WebhookHandler(p.WebhookSecret))
	if p.WebhookURL != "" {
		err := untilConnected(ctx, "register the Telegram webhook (REPLYFLOW_TELEGRAM_WEBHOOK_URL)", gw, func() error {
			return rcv.SetWebhook(ctx, p.WebhookURL, p.WebhookSecret)
		})
		if err != nil {
			return err
		}
	}
	gw.Health.Report(Channel, adapters.Health{State: adapters.StateUp})
	gw.Logger.Info("Telegram connected", "mode", "webhook", "path", p.WebhookPath, "bot", rcv.Identity().Username)
	return nil
}

// untilConnected runs attempt until it succeeds, ctx is done, or Telegram
// refuses for good (a permanent error, returned). Each failure is logged
// as an error with the time of the next attempt and shown on /healthz.
func untilConnected(ctx context.Context, what string, gw adapters.GatewaySide, attempt func() error) error {
	err := connect.Until(ctx, attempt, func(err error) (bool, time.Duration) {
		kind, after := adapters.Classify(err)
		return kind == adapters.Permanent, after
	}, func(n int, next time.Time, err error) {
		gw.Logger.Error("Telegram unreachable; the other platforms keep working, trying again (check the network and REPLYFLOW_TELEGRAM_API_URL)",
			"attempt", n, "next_attempt_at", next.Format(time.RFC3339), "error", err)
		gw.Health.Report(Channel, adapters.Health{State: adapters.StateConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next})
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: Telegram refused (check REPLYFLOW_TELEGRAM_TOKEN and REPLYFLOW_TELEGRAM_API_URL): %w", what, err)
	}
	return err
}
