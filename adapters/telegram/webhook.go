package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/go-telegram/bot"
)

// maxWebhookBody bounds one update's body; Telegram's are far smaller.
const maxWebhookBody = 1 << 20

// WebhookHandler serves Telegram's webhook calls: a request without the
// secret token gets 401, a body that is not an update gets 400, and 200
// is answered only after the update was accepted (or dropped by the
// gateway's rate limits, on purpose); otherwise 503, and Telegram
// delivers the update again.
func (r *Receiver) WebhookHandler(secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "the Telegram webhook takes POST", http.StatusMethodNotAllowed)
			return
		}
		got := req.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
			http.Error(w, "wrong or missing X-Telegram-Bot-Api-Secret-Token", http.StatusUnauthorized)
			return
		}
		// Telegram always posts JSON, and never 1 MiB: a request that
		// has the secret but not these is no update (415, 413).
		if media, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); media != "application/json" {
			http.Error(w, "Telegram posts updates as Content-Type: application/json", http.StatusUnsupportedMediaType)
			return
		}
		var u Update
		data, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxWebhookBody))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			r.logger.Warn("Telegram webhook body refused: over the limit", "limit_bytes", maxWebhookBody)
			http.Error(w, "the update is larger than replyflow accepts from Telegram (1 MiB)", http.StatusRequestEntityTooLarge)
			return
		}
		if err == nil {
			err = json.Unmarshal(data, &u)
		}
		if err == nil && u.ID <= 0 {
			err = errors.New("update_id is missing")
		}
		if err != nil {
			r.logger.Warn("Telegram webhook body refused", "error", err)
			http.Error(w, "not a Telegram update: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := r.Handle(req.Context(), &u); err != nil {
			r.logger.Warn("Webhook update not accepted; Telegram will deliver it again", "update_id", u.ID, "error", err)
			http.Error(w, "the update could not be handed to Temporal yet; deliver it again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// SetWebhook points Telegram at url with the secret token and the updates
// replyflow handles.
func (r *Receiver) SetWebhook(ctx context.Context, url, secret string) error {
	_, err := r.bot.SetWebhook(ctx, &bot.SetWebhookParams{URL: url, SecretToken: secret, AllowedUpdates: AllowedUpdates})
	if err != nil {
		return classify("setWebhook", err)
	}
	return nil
}
