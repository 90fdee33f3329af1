package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/bounded"
	"github.com/replyflow/replyflow/adapters/internal/budget"
	"github.com/replyflow/replyflow/pipeline"
)

// DefaultAPIURL is the Bot API's address; tests point the adapter at a
// fake (telegramtest) instead.
const DefaultAPIURL = "https://api.telegram.org"

// Emoji is the reaction lifecycle in Telegram's allowed reaction set:
// bots may only use those, and "✍" must be the bare U+270D.
var Emoji = map[pipeline.ReactionState]string{
	pipeline.ReactionReceived:    "👀",
	pipeline.ReactionThinking:    "\u270d",
	pipeline.ReactionWaitingUser: "🤔",
	pipeline.ReactionDone:        "👌",
	pipeline.ReactionError:       "👎",
}

// IDMap resolves the bot's internal message IDs to Telegram's; the store
// is the real one.
type IDMap = adapters.IDMap

// ClientConfig configures the outbound side.
type ClientConfig struct {
	Token      string
	APIURL     string // DefaultAPIURL when empty
	HTTPClient *http.Client
	// Anchors resolves reply anchors that are not Telegram message IDs;
	// nil sends such replies unanchored.
	Anchors IDMap
	// Emoji overrides entries of the Emoji map.
	Emoji  map[pipeline.ReactionState]string
	Pacing Pacing
	Logger *slog.Logger
}

// Client is the Telegram adapters.Outbound.
type Client struct {
	bot   *bot.Bot
	cfg   ClientConfig
	emoji map[pipeline.ReactionState]string
	pace  *pacer
	sent  *bounded.Map // idempotency key → message ID, sent by this worker
	// shown is what each message the bot sent or edited last shows
	// (by chat/message): an edit to the same is not sent.
	shown  *budget.Shown
	logger *slog.Logger
	// reactionsOff are the chats that refused a reaction as invalid
	// (reactions restricted by the admins): the lifecycle is off there.
	reactionsOff sync.Map
}

var _ adapters.Outbound = (*Client)(nil)

// NewClient builds the outbound adapter. It makes no call to Telegram.
func NewClient(cfg ClientConfig) (*Client, error) {
	b, err := newBot(cfg.Token, cfg.APIURL, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	c := &Client{bot: b, cfg: cfg, emoji: map[pipeline.ReactionState]string{}, pace: newPacer(cfg.Pacing), sent: bounded.New(4096), shown: budget.NewShown(), logger: cfg.Logger}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	for state, e := range Emoji {
		c.emoji[state] = e
	}
	for state, e := range cfg.Emoji {
		c.emoji[state] = e
	}
	return c, nil
}

// SetAnchors sets the ID map reply anchors resolve through; call it
// before the worker starts.
func (c *Client) SetAnchors(ids IDMap) { c.cfg.Anchors = ids }

// BotID is the bot's numeric ID, the part of the token before the colon.
func BotID(token string) (int64, error) {
	id, secret, ok := strings.Cut(token, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 || secret == "" {
		return 0, errors.New("the Telegram bot token must look like 123456789:AA... (as BotFather gives it)")
	}
	return n, nil
}

func newBot(token, apiURL string, hc *http.Client) (*bot.Bot, error) {
	if _, err := BotID(token); err != nil {
		return nil, err
	}
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	opts := []bot.Option{bot.WithServerURL(strings.TrimRight(apiURL, "/")), bot.WithSkipGetMe(), bot.WithHTTPClient(time.Minute, hc)}
	b, err := bot.New(token, opts...)
	if err != nil {
		return nil, fmt.Errorf("set up the Telegram client: %w", err)
	}
	return b, nil
}

func chatOf(key pipeline.SessionKey) (int64, error) {
	id, err := strconv.ParseInt(key.Chat, 10, 64)
	if err != nil {
		return 0, &adapters.Error{Kind: adapters.Permanent, Op: "telegram", Err: fmt.Errorf("chat %q of %s is not a Telegram chat ID", key.Chat, key.WorkflowID())}
	}
	return id, nil
}

// Send delivers one chunk as Telegram HTML, in the inbound's topic and
// anchored to the message it answers, and returns its message ID. A chunk
// Telegram cannot parse is sent again as plain text. Telegram has no
// idempotency key: a retry on this worker of a chunk already sent returns
// the first message's ID, but a chunk in flight when a worker dies may
// appear twice.
func (c *Client) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	if id, ok := c.sent.Get(d.IdempotencyKey); ok {
		return id, nil
	}
	chat, err := chatOf(d.Session)
	if err != nil {
		return "", err
	}
	params := &bot.SendMessageParams{
		ChatID:             chat,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		ReplyMarkup:        keyboard(d.Buttons),
	}
	params.Text, params.ParseMode = formatted(d.Text)
	params.MessageThreadID, params.ReplyParameters = c.placement(ctx, d)
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), "sendMessage", chat, costMessage); err != nil {
		return "", err
	}
	msg, err := c.bot.SendMessage(ctx, params)
	if descIs(err, descCannotParse) {
		c.logger.Warn("Telegram refused a chunk's formatting; sending it as plain text", "session", d.Session.WorkflowID(), "chunk", d.Index+1, "error", err)
		params.Text, params.ParseMode = PlainText(d.Text), ""
		msg, err = c.bot.SendMessage(ctx, params)
	}
	if err != nil {
		return "", c.failed(chat, "sendMessage", err)
	}
	id := strconv.Itoa(msg.ID)
	c.sent.Put(d.IdempotencyKey, id)
	c.shown.Put(shownKey(chat, id), d.Text, d.Buttons)
	return id, nil
}

func shownKey(chat int64, msgID string) string { return strconv.FormatInt(chat, 10) + "/" + msgID }

// placement is where a delivery goes: its topic (0 for none) and the
// message it answers (nil for none).
func (c *Client) placement(ctx context.Context, d pipeline.Delivery) (int, *models.ReplyParameters) {
	topic, _ := topicOf(d.ThreadID)
	if anchor := c.anchor(ctx, d); anchor > 0 {
		return topic, &models.ReplyParameters{MessageID: anchor, AllowSendingWithoutReply: true}
	}
	return topic, nil
}

// formatted is a text as Telegram HTML, or as plain text when its HTML
// would show nothing (an empty code block), which Telegram refuses.
func formatted(markdown string) (string, models.ParseMode) {
	if html := RenderHTML(markdown); VisibleLength(html) > 0 {
		return html, models.ParseModeHTML
	}
	return PlainText(markdown), ""
}

// anchor resolves the message a chunk replies to: a Telegram message ID
// as it is, an internal ID through the ID map, else none (0).
func (c *Client) anchor(ctx context.Context, d pipeline.Delivery) int {
	if d.ReplyTo == "" {
		return 0
	}
	if n, err := strconv.Atoi(d.ReplyTo); err == nil && n > 0 {
		return n
	}
	if c.cfg.Anchors == nil {
		return 0
	}
	platformID, ok, err := c.cfg.Anchors.PlatformID(ctx, d.Session.WorkflowID(), d.ReplyTo)
	if err != nil {
		c.logger.Warn("Reply anchor not resolved; sending unanchored", "session", d.Session.WorkflowID(), "anchor", d.ReplyTo, "error", err)
		return 0
	}
	n, convErr := strconv.Atoi(platformID)
	if !ok || convErr != nil {
		return 0
	}
	return n
}

func keyboard(buttons []pipeline.Button) models.ReplyMarkup {
	if len(buttons) == 0 {
		return nil
	}
	row := make([]models.InlineKeyboardButton, len(buttons))
	for i, b := range buttons {
		row[i] = models.InlineKeyboardButton{Text: b.Text, CallbackData: b.Action}
	}
	return models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{row}}
}

// failed classifies err, and on 429 holds the chat for retry_after.
func (c *Client) failed(chat int64, op string, err error) error {
	classified := classify(op, err)
	if kind, wait := adapters.Classify(classified); kind == adapters.RateLimited {
		c.pace.cool(chat, wait)
	}
	return classified
}

// Edit replaces a bot message's text and buttons (a decided proposal
// loses its buttons). Editing to what is already there succeeds, and
// for a preview's edit this worker knows the message shows already,
// costs no call (budget.Shown.Skips).
func (c *Client) Edit(ctx context.Context, e pipeline.Edit) error {
	chat, err := chatOf(e.Session)
	if err != nil {
		return err
	}
	msgID, err := strconv.Atoi(e.PlatformMessageID)
	if err != nil {
		return &adapters.Error{Kind: adapters.Permanent, Op: "editMessageText", Err: fmt.Errorf("message %q is not a Telegram message ID", e.PlatformMessageID)}
	}
	markup := keyboard(e.Buttons)
	if markup == nil {
		markup = models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	}
	params := &bot.EditMessageTextParams{ChatID: chat, MessageID: msgID, ReplyMarkup: markup}
	params.Text, params.ParseMode = formatted(e.Text)
	key := shownKey(chat, e.PlatformMessageID)
	if c.shown.Skips(ctx, key, e.Text, e.Buttons) {
		return nil
	}
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), opEdit, chat, costMessage); err != nil {
		return err
	}
	_, err = c.bot.EditMessageText(ctx, params)
	if descIs(err, descCannotParse) {
		params.Text, params.ParseMode = PlainText(e.Text), ""
		_, err = c.bot.EditMessageText(ctx, params)
	}
	if err == nil || descIs(err, descNotModified) {
		c.shown.Put(key, e.Text, e.Buttons)
		return nil
	}
	return c.failed(chat, opEdit, err)
}

// SetReaction shows a state on a user's message, or clears it. In a chat
// that refuses the lifecycle's emoji the lifecycle is turned off, once and
// with one log line, instead of failing every turn.
func (c *Client) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	chat, err := chatOf(r.Session)
	if err != nil {
		return err
	}
	msgID, convErr := strconv.Atoi(r.MessageID)
	if convErr != nil {
		return nil // not a message a user wrote (a button press): nothing to show
	}
	if _, off := c.reactionsOff.Load(chat); off && r.State != pipeline.ReactionNone {
		// The lifecycle is off here; clears still go out, so no emoji
		// set before it was turned off is left behind.
		return nil
	}
	if err := c.pace.wait(ctx, max(adapters.PriorityOf(ctx), adapters.PriorityProgress), "setMessageReaction", chat, costOther); err != nil {
		return err
	}
	params := &bot.SetMessageReactionParams{ChatID: chat, MessageID: msgID, Reaction: []models.ReactionType{}}
	if e := c.emoji[r.State]; r.State != pipeline.ReactionNone && e != "" {
		params.Reaction = []models.ReactionType{{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Type: models.ReactionTypeTypeEmoji, Emoji: e}}}
	}
	_, err = c.bot.SetMessageReaction(ctx, params)
	switch {
	case err == nil:
		return nil
	case descIs(err, descReactInvalid):
		if _, already := c.reactionsOff.LoadOrStore(chat, true); !already {
			c.logger.Warn("Telegram refused the reaction emoji in this chat; the reaction lifecycle is off for it until the worker restarts (allow reactions in the chat's settings)",
				"session", r.Session.WorkflowID(), "state", r.State, "error", err)
		}
		return nil
	case notFound(err):
		return nil // the message is gone, and its reaction with it
	}
	return c.failed(chat, "setMessageReaction", err)
}

// Typing shows "typing…" in the chat (in the topic, for a forum).
func (c *Client) Typing(ctx context.Context, key pipeline.SessionKey, threadID string) error {
	chat, err := chatOf(key)
	if err != nil {
		return err
	}
	if err := c.pace.wait(ctx, adapters.PriorityPreview, "sendChatAction", chat, costOther); err != nil {
		return nil // typing is shown only when the chat has room to spare
	}
	params := &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping}
	if topic, ok := topicOf(threadID); ok {
		params.MessageThreadID = topic
	}
	if _, err := c.bot.SendChatAction(ctx, params); err != nil {
		return c.failed(chat, "sendChatAction", err)
	}
	return nil
}

var _ adapters.FileSender = (*Client)(nil)

// SendFile uploads a document with d.Text as its plain caption, in the
// inbound's topic and anchored as Send does. Like Send it remembers what
// this worker sent under the idempotency key.
func (c *Client) SendFile(ctx context.Context, d pipeline.Delivery, f adapters.File) (string, error) {
	if id, ok := c.sent.Get(d.IdempotencyKey); ok {
		return id, nil
	}
	chat, err := chatOf(d.Session)
	if err != nil {
		return "", err
	}
	if len(f.Data) > maxUploadBytes {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: "telegram sendDocument", Err: fmt.Errorf("the file is %d bytes; bots upload at most %d MB", len(f.Data), maxUploadBytes>>20)}
	}
	params := &bot.SendDocumentParams{
		ChatID:   chat,
		Document: &models.InputFileUpload{Filename: f.Name, Data: bytes.NewReader(f.Data)},
		Caption:  PlainText(d.Text),
	}
	params.MessageThreadID, params.ReplyParameters = c.placement(ctx, d)
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), "sendDocument", chat, costMessage); err != nil {
		return "", err
	}
	msg, err := c.bot.SendDocument(ctx, params)
	if err != nil {
		return "", c.failed(chat, "sendDocument", err)
	}
	id := strconv.Itoa(msg.ID)
	c.sent.Put(d.IdempotencyKey, id)
	return id, nil
}

// maxUploadBytes is the Bot API's bound on a file a bot uploads.
const maxUploadBytes = 50 << 20

var _ adapters.VoiceSender = (*Client)(nil)

// SendVoice sends a spoken reply as a voice note (sendVoice: Ogg/Opus),
// without a caption, in the inbound's topic and anchored as Send does.
// Like Send it remembers what this worker sent under the idempotency key.
func (c *Client) SendVoice(ctx context.Context, d pipeline.Delivery, v adapters.File) (string, error) {
	if id, ok := c.sent.Get(d.IdempotencyKey); ok {
		return id, nil
	}
	chat, err := chatOf(d.Session)
	if err != nil {
		return "", err
	}
	if len(v.Data) == 0 || len(v.Data) > maxUploadBytes {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: "telegram sendVoice", Err: fmt.Errorf("the voice note is %d bytes; bots upload 1 byte to %d MB", len(v.Data), maxUploadBytes>>20)}
	}
	params := &bot.SendVoiceParams{
		ChatID: chat,
		Voice:  &models.InputFileUpload{Filename: v.Name, Data: bytes.NewReader(v.Data)},
	}
	params.MessageThreadID, params.ReplyParameters = c.placement(ctx, d)
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), "sendVoice", chat, costMessage); err != nil {
		return "", err
	}
	msg, err := c.bot.SendVoice(ctx, params)
	if err != nil {
		return "", c.failed(chat, "sendVoice", err)
	}
	id := strconv.Itoa(msg.ID)
	c.sent.Put(d.IdempotencyKey, id)
	return id, nil
}
