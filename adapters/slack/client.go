package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/bounded"
	"github.com/replyflow/replyflow/adapters/internal/budget"
	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
)

// ChunkEventType is the metadata event_type on every chunk the bot
// posts; its payload's "key" is the Delivery's IdempotencyKey.
const ChunkEventType = "replyflow_chunk"

// Shortcodes is the reaction lifecycle as Slack emoji names.
var Shortcodes = map[pipeline.ReactionState]string{
	pipeline.ReactionReceived:    "eyes",
	pipeline.ReactionThinking:    "writing_hand",
	pipeline.ReactionWaitingUser: "hourglass_flowing_sand",
	pipeline.ReactionDone:        "white_check_mark",
	pipeline.ReactionError:       "x",
}

// TypingStatus is the assistant status shown while a reply is written.
const TypingStatus = "is thinking…"

// DefaultDedupeWindow is how far back Send looks for a chunk it may
// already have posted.
const DefaultDedupeWindow = 15 * time.Minute

// ClientConfig configures the outbound side.
type ClientConfig struct {
	Token string // the bot token, xoxb-…
	// APIURL is slack-go's API address ("https://slack.com/api/" when
	// empty); tests point it at slacktest.
	APIURL     string
	HTTPClient *http.Client
	// BotUserID is the bot's user ID; empty asks auth.test once.
	BotUserID string
	// Shortcodes overrides entries of the Shortcodes map.
	Shortcodes map[pipeline.ReactionState]string
	// PostInterval is the least time between posts in one channel;
	// DefaultPostInterval when zero, none when negative.
	PostInterval time.Duration
	// DedupeWindow is how far back a Send looks for its chunk;
	// DefaultDedupeWindow when zero.
	DedupeWindow time.Duration
	Logger       *slog.Logger
}

// Client is the Slack adapters.Outbound.
type Client struct {
	api        *slack.Client
	history    historyAPI // findChunk's reads, with api's token, base URL and HTTP client
	cfg        ClientConfig
	shortcodes map[pipeline.ReactionState]string
	pace       *pacer
	sent       *bounded.Map // idempotency key → ts, posted by this worker
	typing     *bounded.Map // channel/thread_ts → "" where a status is shown
	// shown is what each message the bot posted or edited last shows
	// (by channel/ts): an edit to the same is not sent.
	shown  *budget.Shown
	logger *slog.Logger
	// readScopeWarned: the missing reactions:read scope is logged once
	// per process, not at every reaction change.
	readScopeWarned atomic.Bool

	mu        sync.Mutex
	botUserID string
}

var _ adapters.Outbound = (*Client)(nil)

// NewClient builds the outbound adapter; it makes no call to Slack.
// slack-go's own retries stay off (no OptionRetry): a write it retried
// after a lost answer would post twice, and the activities' retry
// policy, told the Retry-After, is the one that retries.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Token == "" {
		return nil, errors.New("the Slack bot token is empty (set REPLYFLOW_SLACK_BOT_TOKEN to the app's xoxb- token)")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.PostInterval == 0 {
		cfg.PostInterval = DefaultPostInterval
	}
	if cfg.DedupeWindow <= 0 {
		cfg.DedupeWindow = DefaultDedupeWindow
	}
	opts := []slack.Option{slack.OptionHTTPClient(cfg.HTTPClient)}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	c := &Client{
		api:        slack.New(cfg.Token, opts...),
		history:    newHistoryAPI(cfg.HTTPClient, cfg.Token, cfg.APIURL).withMetadata(),
		cfg:        cfg,
		shortcodes: map[pipeline.ReactionState]string{},
		pace:       newPacer(cfg.PostInterval),
		sent:       bounded.New(4096),
		typing:     bounded.New(10_000),
		shown:      budget.NewShown(),
		logger:     cfg.Logger,
		botUserID:  cfg.BotUserID,
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	for state, name := range Shortcodes {
		c.shortcodes[state] = name
	}
	for state, name := range cfg.Shortcodes {
		c.shortcodes[state] = name
	}
	return c, nil
}

func channelOf(key pipeline.SessionKey, op string) (string, error) {
	if key.Chat == "" {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: op, Err: fmt.Errorf("session %s has no Slack channel ID", key.WorkflowID())}
	}
	return key.Chat, nil
}

// Send posts one chunk as mrkdwn in the Delivery's thread (top-level
// when its ThreadID is empty), with the idempotency key in the message
// metadata, and returns the message's ts. Before posting it looks for a
// message of the bot carrying that key (see findChunk), so a retry after
// a lost answer returns the first post instead of posting again.
func (c *Client) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	const op = "chat.postMessage"
	if ts, ok := c.sent.Get(d.IdempotencyKey); ok {
		return ts, nil
	}
	channel, err := channelOf(d.Session, op)
	if err != nil {
		return "", err
	}
	if d.PrivateTo != "" {
		return c.sendEphemeral(ctx, channel, d)
	}
	// Pace first: a channel cooling down after a 429 costs no lookup, and
	// the lookup sees what was posted until just before this post.
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
		return "", err
	}
	if ts, found, err := c.findChunk(ctx, channel, d.ThreadID, d.IdempotencyKey); err != nil {
		return "", err
	} else if found {
		c.logger.Info("Chunk already posted; not posting it again", "session", d.Session.WorkflowID(), "chunk", d.Index+1, "ts", ts)
		c.sent.Put(d.IdempotencyKey, ts)
		return ts, nil
	}
	text := mrkdwn.Render(d.Text)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl()}
	if len(d.Buttons) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(withButtons(text, d.Buttons)...))
	}
	if d.ThreadID != "" {
		opts = append(opts, slack.MsgOptionTS(d.ThreadID))
	}
	if d.IdempotencyKey != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: ChunkEventType, EventPayload: map[string]any{"key": d.IdempotencyKey}}))
	}
	_, ts, err := c.api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return "", c.failed(channel, op, err)
	}
	c.sent.Put(d.IdempotencyKey, ts)
	c.shown.Put(messageKey(channel, ts), text, d.Buttons)
	if d.Index+1 >= d.Total {
		c.clearTyping(ctx, d.Session, channel, d.ThreadID)
	}
	return ts, nil
}

// sendEphemeral shows a reply to d.PrivateTo alone (chat.postEphemeral),
// in the Delivery's thread. Slack keeps no ephemeral message in history,
// so a retry after a lost answer cannot be found and may show it twice,
// to that one user, until they reload; it carries no buttons.
func (c *Client) sendEphemeral(ctx context.Context, channel string, d pipeline.Delivery) (string, error) {
	const op = "chat.postEphemeral"
	opts := []slack.MsgOption{slack.MsgOptionText(mrkdwn.Render(d.Text), false)}
	if d.ThreadID != "" {
		opts = append(opts, slack.MsgOptionTS(d.ThreadID))
	}
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
		return "", err
	}
	ts, err := c.api.PostEphemeralContext(ctx, channel, d.PrivateTo, opts...)
	if err != nil {
		return "", c.failed(channel, op, err)
	}
	c.sent.Put(d.IdempotencyKey, ts)
	return ts, nil
}

// failed classifies err, and on 429 holds the channel for Retry-After.
func (c *Client) failed(channel, op string, err error) error {
	classified := classify(op, err)
	if kind, wait := adapters.Classify(classified); kind == adapters.RateLimited {
		c.pace.cool(channel, op, wait)
	}
	return classified
}

// Edit replaces a bot message's text and blocks; without buttons the
// blocks are cleared, so a decided proposal loses its buttons.
func (c *Client) Edit(ctx context.Context, e pipeline.Edit) error {
	const op = "chat.update"
	channel, err := channelOf(e.Session, op)
	if err != nil {
		return err
	}
	if e.PlatformMessageID == "" {
		return &adapters.Error{Kind: adapters.Permanent, Op: op, Err: fmt.Errorf("no message ts to edit in %s", e.Session.WorkflowID())}
	}
	text := mrkdwn.Render(e.Text)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(withButtons(text, e.Buttons)...)}
	if len(e.Buttons) == 0 {
		opts[1] = slack.MsgOptionBlocks()
	}
	key := messageKey(channel, e.PlatformMessageID)
	if c.shown.Skips(ctx, key, text, e.Buttons) {
		return nil
	}
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
		return err
	}
	if _, _, _, err := c.api.UpdateMessageContext(ctx, channel, e.PlatformMessageID, opts...); err != nil {
		return c.failed(channel, op, err)
	}
	c.shown.Put(key, text, e.Buttons)
	return nil
}

func messageKey(channel, ts string) string { return channel + "/" + ts }
