package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
)

// PollTimeout is how long one getUpdates call waits for updates.
const PollTimeout = 25 * time.Second

// maxBackoff caps the wait between failed attempts.
const maxBackoff = 30 * time.Second

// Poll long-polls getUpdates until ctx is done. It moves the offset past an
// update only after Handle accepted it, so an update fetched by a gateway
// that dies before handing it to Temporal is fetched again by the next
// one. (The SDK's own poller confirms updates as soon as it has read them,
// which is why this one is hand-written.)
func (r *Receiver) Poll(ctx context.Context) error {
	if _, err := r.bot.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); err != nil && ctx.Err() == nil {
		r.logger.Warn("Could not remove a webhook before polling; getUpdates will fail while one is set", "error", err)
	}
	r.logger.Info("Polling Telegram for updates")
	var offset int64
	var failures int
	for ctx.Err() == nil {
		updates, err := r.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var apiErr *apiError
			if errors.As(err, &apiErr) && apiErr.Code == http.StatusUnauthorized {
				return fmt.Errorf("telegram refused the bot token (check REPLYFLOW_TELEGRAM_TOKEN): %w", err)
			}
			failures++
			r.logger.Warn("getUpdates failed; trying again", "attempt", failures, "error", err)
			if !sleep(ctx, backoff(failures, err)) {
				break
			}
			continue
		}
		failures = 0
		if len(updates) == 0 {
			continue
		}
		if !r.handleBatch(ctx, updates) {
			return nil
		}
		offset = updates[len(updates)-1].ID + 1
	}
	return nil
}

// chatsAtOnce bounds how many chats of one batch are handed to Temporal
// at the same time.
const chatsAtOnce = 32

// handleBatch hands a batch of updates to the sink: the updates of one
// chat in order (they go to one session), different chats at once, so a
// busy bot is not held to one SignalWithStart round trip per update. It
// returns once every update was accepted, or false when ctx ended first;
// the caller moves the offset only after it returned true.
func (r *Receiver) handleBatch(ctx context.Context, updates []Update) bool {
	var chats []int64
	byChat := map[int64][]*Update{}
	for i := range updates {
		chat := updateChat(&updates[i])
		if _, seen := byChat[chat]; !seen {
			chats = append(chats, chat)
		}
		byChat[chat] = append(byChat[chat], &updates[i])
	}
	slots := make(chan struct{}, chatsAtOnce)
	var wg sync.WaitGroup
	for _, chat := range chats {
		wg.Add(1)
		slots <- struct{}{}
		go func(batch []*Update) {
			defer func() { <-slots; wg.Done() }()
			for _, u := range batch {
				if !r.handleUntilAccepted(ctx, u) {
					return
				}
			}
		}(byChat[chat])
	}
	wg.Wait()
	return ctx.Err() == nil
}

// updateChat is the chat an update belongs to (0 when it names none).
func updateChat(u *Update) int64 {
	switch {
	case u.Message != nil:
		return u.Message.Chat.ID
	case u.EditedMessage != nil:
		return u.EditedMessage.Chat.ID
	case u.CallbackQuery != nil && u.CallbackQuery.Message.Message != nil:
		return u.CallbackQuery.Message.Message.Chat.ID
	case u.CallbackQuery != nil && u.CallbackQuery.Message.InaccessibleMessage != nil:
		return u.CallbackQuery.Message.InaccessibleMessage.Chat.ID
	case u.MessageReaction != nil:
		return u.MessageReaction.Chat.ID
	}
	return 0
}

// handleUntilAccepted offers an update to the sink until it is accepted or
// ctx is done (false).
func (r *Receiver) handleUntilAccepted(ctx context.Context, u *Update) bool {
	for attempt := 1; ; attempt++ {
		err := r.Handle(ctx, u)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		r.logger.Warn("Update not accepted by Temporal; holding the offset and trying again", "update_id", u.ID, "attempt", attempt, "error", err)
		if !sleep(ctx, backoff(attempt, nil)) {
			return false
		}
	}
}

func backoff(attempt int, err error) time.Duration {
	var apiErr *apiError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return time.Duration(apiErr.RetryAfter) * time.Second
	}
	d := 100 * time.Millisecond << min(attempt-1, 10)
	return min(d, maxBackoff)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// apiError is a Bot API refusal of getUpdates.
type apiError struct {
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("getUpdates: %d %s", e.Code, e.Description)
	if e.Code == http.StatusConflict {
		msg += " (another gateway is polling this bot, or a webhook is set: run one poller per bot)"
	}
	return msg
}

func (r *Receiver) getUpdates(ctx context.Context, offset int64) ([]Update, error) {
	body, err := json.Marshal(map[string]any{
		"offset":          offset,
		"timeout":         int(PollTimeout / time.Second),
		"allowed_updates": AllowedUpdates,
	})
	if err != nil {
		return nil, err
	}
	apiURL := r.cfg.APIURL
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	callCtx, cancel := context.WithTimeout(ctx, PollTimeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, strings.TrimRight(apiURL, "/")+"/bot"+r.cfg.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("build the getUpdates request: bad API URL")
	}
	req.Header.Set("Content-Type", "application/json")
	client := r.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// The URL holds the token: never let it reach a log.
		return nil, errors.New(strings.ReplaceAll(err.Error(), r.cfg.Token, "***"))
	}
	defer resp.Body.Close()
	var out struct {
		OK          bool     `json:"ok"`
		Result      []Update `json:"result"`
		ErrorCode   int      `json:"error_code"`
		Description string   `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("getUpdates: undecodable answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if !out.OK {
		return nil, &apiError{Code: out.ErrorCode, Description: out.Description, RetryAfter: out.Parameters.RetryAfter}
	}
	return out.Result, nil
}
