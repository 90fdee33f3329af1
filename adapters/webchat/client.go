package webchat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Client is the outbound adapter: it calls the web chat's bot API on behalf
// of the worker.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	emoji map[pipeline.ReactionState]string
	// uploads reads the files users uploaded (SetUploads); nil reads
	// none.
	uploads adapters.UploadReader
}

var _ adapters.Outbound = (*Client)(nil)

// NewClient returns a client of the bot API at baseURL (for example
// http://127.0.0.1:8080).
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webchat: %q is not an http(s) URL of the gateway's web chat", baseURL)
	}
	if token == "" {
		return nil, fmt.Errorf("webchat: the bot token is empty; set REPLYFLOW_WEBCHAT_BOT_TOKEN to the gateway's")
	}
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	return &Client{base: u, token: token, http: hc, emoji: maps.Clone(pipeline.DefaultEmoji)}, nil
}

// SetEmoji changes the emoji shown for a reaction state (the per-channel
// emoji map). Call it before the client is used.
func (c *Client) SetEmoji(state pipeline.ReactionState, emoji string) { c.emoji[state] = emoji }

// Send posts one chunk; the idempotency key makes a retried send return the
// first send's message ID instead of posting again.
func (c *Client) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	var out struct {
		MessageID string `json:"message_id"`
	}
	body := BotMessage{IdempotencyKey: d.IdempotencyKey, Text: d.Text, ThreadID: d.ThreadID, ReplyTo: d.ReplyTo, Buttons: d.Buttons}
	err := c.call(ctx, "send", http.MethodPost, c.path("bot/chats", d.Session.Chat, "messages"), body, &out)
	return out.MessageID, err
}

// Edit replaces a bot message's text and buttons.
func (c *Client) Edit(ctx context.Context, e pipeline.Edit) error {
	body := BotEdit{Text: e.Text, Buttons: e.Buttons}
	return c.call(ctx, "edit", http.MethodPatch, c.path("bot/chats", e.Session.Chat, "messages", e.PlatformMessageID), body, nil)
}

// SetReaction sets the emoji of a state on a user message, or clears it.
func (c *Client) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	body := ReactionBody{Emoji: c.emoji[r.State], State: string(r.State)}
	return c.call(ctx, "react", http.MethodPut, c.path("bot/chats", r.Session.Chat, "messages", r.MessageID, "reaction"), body, nil)
}

// Typing shows the typing indicator in a chat or thread.
func (c *Client) Typing(ctx context.Context, s pipeline.SessionKey, threadID string) error {
	return c.call(ctx, "typing", http.MethodPost, c.path("bot/chats", s.Chat, "typing"), TypingEvent{ThreadID: threadID}, nil)
}

func (c *Client) path(parts ...string) string {
	escaped := make([]string, len(parts))
	for i, p := range parts {
		escaped[i] = url.PathEscape(p)
	}
	escaped[0] = parts[0]
	return c.base.String() + "/" + strings.Join(escaped, "/")
}

func (c *Client) call(ctx context.Context, op, method, target string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return &adapters.Error{Kind: adapters.Permanent, Op: "webchat " + op, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(payload))
	if err != nil {
		return &adapters.Error{Kind: adapters.Permanent, Op: "webchat " + op, Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return &adapters.Error{Kind: adapters.Transient, Op: "webchat " + op, Err: fmt.Errorf("gateway unreachable at %s (is `replyflow gateway` running?): %w", c.base, err)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		return classify(op, resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &adapters.Error{Kind: adapters.Transient, Op: "webchat " + op, Err: fmt.Errorf("unreadable answer: %w", err)}
	}
	return nil
}

func classify(op string, resp *http.Response, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	err := &adapters.Error{Op: "webchat " + op, Err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, e.Error)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		err.Kind = adapters.RateLimited
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
			err.RetryAfter = time.Duration(secs) * time.Second
		}
	case resp.StatusCode >= 500:
		err.Kind = adapters.Transient
	default:
		err.Kind = adapters.Permanent
	}
	return err
}
