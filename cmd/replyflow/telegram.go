package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// Telegram's rule for a webhook's secret token.
var webhookSecretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (c Config) telegramEnabled() bool { return c.TelegramToken != "" }

func (c Config) validateTelegram() []error {
	if !c.telegramEnabled() {
		return nil
	}
	var errs []error
	if _, err := telegram.BotID(c.TelegramToken); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_TOKEN: %w", err))
	}
	switch c.TelegramMode {
	case "polling":
	case "webhook":
		if !webhookSecretPattern.MatchString(c.TelegramWebhookSecret) {
			errs = append(errs, errors.New("REPLYFLOW_TELEGRAM_WEBHOOK_SECRET is required in webhook mode: 1 to 256 of A-Z a-z 0-9 _ -"))
		}
		if len(c.TelegramWebhookPath) < 2 || c.TelegramWebhookPath[0] != '/' {
			errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_WEBHOOK_PATH must be a path like /telegram/webhook, got %q", c.TelegramWebhookPath))
		}
	default:
		errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_MODE must be polling or webhook, got %q", c.TelegramMode))
	}
	if c.TelegramPace < 0 || c.TelegramGroupPerMinute < 0 {
		errs = append(errs, errors.New("REPLYFLOW_TELEGRAM_PACE and REPLYFLOW_TELEGRAM_GROUP_PER_MINUTE must not be negative"))
	}
	for _, state := range sortedKeys(c.TelegramEmoji) {
		if _, ok := pipeline.DefaultEmoji[pipeline.ReactionState(state)]; !ok {
			errs = append(errs, fmt.Errorf("REPLYFLOW_TELEGRAM_EMOJI: unknown reaction state %q; use received, thinking, waiting_user, done or error", state))
		}
	}
	return errs
}

// telegramOutbound is the worker's Telegram adapter; anchors resolve
// through ids (the store) once it is open.
func telegramOutbound(cfg Config, logger *slog.Logger) (*telegram.Client, error) {
	emoji := map[pipeline.ReactionState]string{}
	for state, e := range cfg.TelegramEmoji {
		emoji[pipeline.ReactionState(state)] = e
	}
	return telegram.NewClient(telegram.ClientConfig{
		Token:  cfg.TelegramToken,
		APIURL: cfg.TelegramAPIURL,
		Emoji:  emoji,
		Pacing: telegram.Pacing{PerChat: cfg.TelegramPace, GroupPerMinute: cfg.TelegramGroupPerMinute},
		Logger: logger,
	})
}

// startTelegram connects the gateway to Telegram in the background, so
// that Telegram being unreachable never holds up the other platforms: it
// asks who the bot is until Telegram answers, then in webhook mode serves
// the webhook it mounted on mux (and registers it when
// REPLYFLOW_TELEGRAM_WEBHOOK_URL is set), in polling mode polls until ctx
// is done. The returned channel reports a refusal no retry can fix (a
// wrong token).
func startTelegram(ctx context.Context, mux *http.ServeMux, sink *gateway.Ingress, cfg Config, logger *slog.Logger, status *gatewayStatus) <-chan error {
	stopped := make(chan error, 1)
	var webhook atomic.Pointer[http.Handler]
	if cfg.TelegramMode == "webhook" {
		mux.Handle("POST "+cfg.TelegramWebhookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := webhook.Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			http.Error(w, "the gateway is not connected to Telegram yet; deliver the update again", http.StatusServiceUnavailable)
		}))
	}
	status.set(telegram.Channel, platformState{State: platformConnecting})
	go func() {
		err := runTelegram(ctx, sink, cfg, logger, status, func(h http.Handler) { webhook.Store(&h) })
		if err != nil && ctx.Err() == nil {
			status.set(telegram.Channel, platformState{State: platformFailed, Error: err.Error()})
			stopped <- err
		}
	}()
	return stopped
}

func runTelegram(ctx context.Context, sink *gateway.Ingress, cfg Config, logger *slog.Logger, status *gatewayStatus, serveWebhook func(http.Handler)) error {
	var rcv *telegram.Receiver
	err := untilConnected(ctx, "ask Telegram who the bot is (getMe)", logger, status, func() (err error) {
		rcv, err = telegram.NewReceiver(ctx, telegram.ReceiverConfig{
			Token: cfg.TelegramToken, APIURL: cfg.TelegramAPIURL, Sink: sink, Feedback: sink, Logger: logger,
		})
		return err
	})
	if err != nil {
		return err
	}
	if cfg.TelegramMode == "polling" {
		status.set(telegram.Channel, platformState{State: platformUp})
		logger.Info("Telegram connected", "mode", "polling", "bot", rcv.Identity().Username)
		return rcv.Poll(ctx)
	}
	serveWebhook(rcv.WebhookHandler(cfg.TelegramWebhookSecret))
	if cfg.TelegramWebhookURL != "" {
		err := untilConnected(ctx, "register the Telegram webhook (REPLYFLOW_TELEGRAM_WEBHOOK_URL)", logger, status, func() error {
			return rcv.SetWebhook(ctx, cfg.TelegramWebhookURL, cfg.TelegramWebhookSecret)
		})
		if err != nil {
			return err
		}
	}
	status.set(telegram.Channel, platformState{State: platformUp})
	logger.Info("Telegram connected", "mode", "webhook", "path", cfg.TelegramWebhookPath, "bot", rcv.Identity().Username)
	return nil
}

// Waits between attempts to reach Telegram: doubling from the first to
// the last, then the last until it answers.
const (
	firstTelegramRetry = time.Second
	lastTelegramRetry  = 30 * time.Second
)

// untilConnected runs attempt until it succeeds, ctx is done, or Telegram
// refuses for good (a permanent error, returned). Each failure is logged
// as an error with the time of the next attempt and shown on /healthz.
func untilConnected(ctx context.Context, what string, logger *slog.Logger, status *gatewayStatus, attempt func() error) error {
	wait := firstTelegramRetry
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		kind, after := adapters.Classify(err)
		if kind == adapters.Permanent {
			return fmt.Errorf("%s: Telegram refused (check REPLYFLOW_TELEGRAM_TOKEN and REPLYFLOW_TELEGRAM_API_URL): %w", what, err)
		}
		wait = max(wait, after)
		next := time.Now().Add(wait)
		logger.Error("Telegram unreachable; the other platforms keep working, trying again (check the network and REPLYFLOW_TELEGRAM_API_URL)",
			"attempt", n, "next_attempt_at", next.Format(time.RFC3339), "error", err)
		status.set(telegram.Channel, platformState{State: platformConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, lastTelegramRetry)
	}
}
