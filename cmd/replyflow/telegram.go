package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers"
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

// startTelegram connects the gateway to Telegram: in webhook mode it mounts
// the webhook on mux (and registers it when REPLYFLOW_TELEGRAM_WEBHOOK_URL
// is set); in polling mode it polls until ctx is done. The returned
// channel reports a poller that stopped for good.
func startTelegram(ctx context.Context, mux *http.ServeMux, sink *workers.Ingress, cfg Config, logger *slog.Logger) (<-chan error, error) {
	rcv, err := newTelegramReceiver(ctx, sink, cfg, logger)
	if err != nil {
		return nil, err
	}
	stopped := make(chan error, 1)
	if cfg.TelegramMode == "webhook" {
		mux.Handle("POST "+cfg.TelegramWebhookPath, rcv.WebhookHandler(cfg.TelegramWebhookSecret))
		if cfg.TelegramWebhookURL != "" {
			if err := rcv.SetWebhook(ctx, cfg.TelegramWebhookURL, cfg.TelegramWebhookSecret); err != nil {
				return nil, fmt.Errorf("register the Telegram webhook (REPLYFLOW_TELEGRAM_WEBHOOK_URL): %w", err)
			}
		}
		logger.Info("Telegram webhook ready", "path", cfg.TelegramWebhookPath, "bot", rcv.Identity().Username)
		return stopped, nil
	}
	go func() {
		if err := rcv.Poll(ctx); err != nil {
			stopped <- err
		}
	}()
	return stopped, nil
}

// newTelegramReceiver asks Telegram who the bot is, waiting out a network
// that is not up yet; a refused token fails at once.
func newTelegramReceiver(ctx context.Context, sink *workers.Ingress, cfg Config, logger *slog.Logger) (*telegram.Receiver, error) {
	for attempt := 1; ; attempt++ {
		rcv, err := telegram.NewReceiver(ctx, telegram.ReceiverConfig{
			Token: cfg.TelegramToken, APIURL: cfg.TelegramAPIURL, Sink: sink, Feedback: sink, Logger: logger,
		})
		if err == nil {
			return rcv, nil
		}
		if kind, _ := adapters.Classify(err); kind == adapters.Permanent || ctx.Err() != nil {
			return nil, err
		}
		logger.Warn("Telegram not reachable yet; trying again", "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(time.Duration(attempt)*time.Second, 30*time.Second)):
		}
	}
}
