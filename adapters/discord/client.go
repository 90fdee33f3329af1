package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/bounded"
	"github.com/replyflow/replyflow/adapters/internal/budget"
	"github.com/replyflow/replyflow/pipeline"
)

// Channel is Discord's name in session keys, settings and logs.
const Channel = "discord"

// TypingInterval is how often the worker refreshes the typing indicator
// on Discord (activities.TypingByChannel): Discord shows it for about 10
// seconds, or until the bot posts.
const TypingInterval = 8 * time.Second

// maxInlineWait is the longest a call waits here for its rate-limit
// bucket (a spent bucket resets within a few seconds); a longer wait is
// answered RateLimited without a call.
const maxInlineWait = 5 * time.Second

// ClientConfig configures the outbound side.
type ClientConfig struct {
	Token string // the bot token, with or without "Bot "
	// APIURL is the REST API's base, shaped as discordgo.EndpointAPI
	// (discordtest's APIURL()); "" is Discord's.
	APIURL     string
	HTTPClient *http.Client
	// ApplicationID is the application's ID, for interaction
	// follow-ups; "" asks Discord once (GET /applications/@me, or the
	// bot's user ID, which new applications share, where that route is
	// not served).
	ApplicationID string
	// Emoji overrides entries of pipeline.DefaultEmoji: a Unicode emoji,
	// or name:id of a custom one.
	Emoji  map[pipeline.ReactionState]string
	Logger *slog.Logger
}

// Client is the Discord adapters.Outbound.
type Client struct {
	dg     *discordgo.Session
	emoji  map[pipeline.ReactionState]string
	logger *slog.Logger
	gate   *bucketGate
	budget *budget.Budget
	// shown is what each message the bot sent or edited last shows (by
	// channel/message): an edit to the same is not sent.
	shown      *budget.Shown
	ephemerals *bounded.Map // idempotency key → ephemeral message ID
	// followupRetries are the waits before each new try of a follow-up
	// whose webhook Discord does not know yet.
	followupRetries []time.Duration

	appMu sync.Mutex
	appID string
}

var _ adapters.Outbound = (*Client)(nil)

// NewClient builds the outbound adapter; it makes no call to Discord.
func NewClient(cfg ClientConfig) (*Client, error) {
	token := strings.TrimSpace(strings.TrimPrefix(cfg.Token, "Bot "))
	if token == "" {
		return nil, errors.New("the Discord bot token is empty (set REPLYFLOW_DISCORD_TOKEN to the token on the application's Bot page)")
	}
	httpClient, err := rebased(cfg.HTTPClient, cfg.APIURL)
	if err != nil {
		return nil, err
	}
	dg, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, err
	}
	dg.Client = httpClient
	dg.ShouldRetryOnRateLimit = false
	dg.MaxRestRetries = 0
	c := &Client{
		dg: dg, emoji: map[pipeline.ReactionState]string{}, logger: cfg.Logger, gate: newBucketGate(),
		budget: budget.New(maxInlineWait, budget.DefaultMaxBuckets), shown: budget.NewShown(),
		ephemerals: bounded.New(1024), appID: cfg.ApplicationID,
		followupRetries: []time.Duration{250 * time.Millisecond, 750 * time.Millisecond, 2 * time.Second},
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	for state, e := range pipeline.DefaultEmoji {
		c.emoji[state] = e
	}
	for state, e := range cfg.Emoji {
		c.emoji[state] = e
	}
	return c, nil
}

// rebased is an HTTP client (a copy of base, or a new one with a 30 s
// timeout) that sends discordgo's requests to apiURL: discordgo's
// endpoints are package globals, computed at init, which this leaves
// alone so that clients aimed at different servers can live side by
// side.
func rebased(base *http.Client, apiURL string) (*http.Client, error) {
	out := &http.Client{Timeout: 30 * time.Second}
	if base != nil {
		copied := *base
		out = &copied
	}
	if apiURL == "" || apiURL == discordgo.EndpointAPI {
		return out, nil
	}
	to, err := url.Parse(apiURL)
	if err != nil || to.Scheme == "" || to.Host == "" {
		return nil, fmt.Errorf("the Discord API URL %q is not an absolute URL like https://discord.com/api/v9/", apiURL)
	}
	from, _ := url.Parse(discordgo.EndpointAPI)
	next := out.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = rebase{from: from, to: to, next: next}
	return out, nil
}

// rebase moves requests under from (Discord's API) to under to, and
// those to Discord's CDN to to's host.
type rebase struct {
	from, to *url.URL
	next     http.RoundTripper
}

func (r rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	if cdnHosts[req.URL.Host] {
		// Attachments come from the CDN: under to's host, path kept.
		out := req.Clone(req.Context())
		out.Host = ""
		out.URL.Scheme, out.URL.Host = r.to.Scheme, r.to.Host
		return r.next.RoundTrip(out)
	}
	if req.URL.Host != r.from.Host || !strings.HasPrefix(req.URL.Path, r.from.Path) {
		return r.next.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	out.Host = ""
	out.URL.Scheme, out.URL.Host = r.to.Scheme, r.to.Host
	base := strings.TrimSuffix(r.to.Path, "/") + "/"
	out.URL.Path = base + strings.TrimPrefix(req.URL.Path, r.from.Path)
	if req.URL.RawPath != "" {
		out.URL.RawPath = base + strings.TrimPrefix(req.URL.RawPath, r.from.Path)
	}
	return r.next.RoundTrip(out)
}

// target is the channel a call goes to: the thread, else the session's
// channel.
func target(session pipeline.SessionKey, threadID, op string) (string, error) {
	if threadID != "" {
		return threadID, nil
	}
	if session.Chat == "" {
		return "", &adapters.Error{Kind: adapters.Permanent, Op: op, Err: fmt.Errorf("session %s has no Discord channel ID", session.WorkflowID())}
	}
	return session.Chat, nil
}

// Send posts one chunk in the Delivery's thread or channel and returns
// the message's ID; see the notes at the top of this file.
func (c *Client) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	channel, err := target(d.Session, d.ThreadID, opSend)
	if err != nil {
		return "", err
	}
	rows, err := components(opSend, d.Buttons)
	if err != nil {
		return "", err
	}
	content := c.content(d.Session, d.Text)
	if d.PrivateVia != "" {
		if id, err := c.sendPrivate(ctx, d, content, rows); !errors.Is(err, errNoWebhook) {
			return id, err
		}
		c.logger.Info("The interaction's token expired, so the private answer is posted in the channel", "session", d.Session.WorkflowID(), "to", d.PrivateTo)
	}
	body := messageBody{Content: content, AllowedMentions: noMentions(), MessageReference: softReply(d.ReplyTo), Components: rows}
	if len(d.Buttons) == 0 {
		body.Components = nil
	}
	if body.Nonce = Nonce(d.IdempotencyKey); body.Nonce != "" {
		body.EnforceNonce = true
	}
	endpoint := discordgo.EndpointChannelMessages(channel)
	var m discordgo.Message
	if err := c.call(ctx, request{op: opSend, method: http.MethodPost, url: endpoint, bucket: endpoint, body: body, wait: true,
		channel: channel, priority: adapters.PriorityOf(ctx)}, &m); err != nil {
		return "", err
	}
	c.shown.Put(channel+"/"+m.ID, content, d.Buttons)
	return m.ID, nil
}

// content is a chunk as sent: rendered, and cut if Discord would refuse
// it.
func (c *Client) content(session pipeline.SessionKey, text string) string {
	content, cut := fit(Render(text))
	if cut {
		c.logger.Warn("A reply is longer than Discord's 2000 characters; it was cut (chunk it with pipeline.Chunk at 2000)",
			"session", session.WorkflowID(), "length", unitLen(text))
	}
	return content
}

// Edit replaces a bot message's text and buttons; without buttons the
// components are cleared, so a decided proposal loses its buttons.
func (c *Client) Edit(ctx context.Context, e pipeline.Edit) error {
	channel, err := target(e.Session, e.ThreadID, opEdit)
	if err != nil {
		return err
	}
	if e.PlatformMessageID == "" {
		return &adapters.Error{Kind: adapters.Permanent, Op: opEdit, Err: fmt.Errorf("no message ID to edit in %s", e.Session.WorkflowID())}
	}
	rows, err := components(opEdit, e.Buttons)
	if err != nil {
		return err
	}
	body := messageBody{Content: c.content(e.Session, e.Text), AllowedMentions: noMentions(), Components: rows}
	key := channel + "/" + e.PlatformMessageID
	if c.shown.Skips(ctx, key, body.Content, e.Buttons) {
		return nil
	}
	err = c.call(ctx, request{op: opEdit, method: http.MethodPatch, url: discordgo.EndpointChannelMessage(channel, e.PlatformMessageID),
		bucket: discordgo.EndpointChannelMessage(channel, ""), body: body, wait: true, channel: channel, priority: adapters.PriorityOf(ctx)}, nil)
	if err == nil {
		c.shown.Put(key, body.Content, e.Buttons)
	}
	return err
}

// Typing shows "… is typing" in the thread or channel for about 10
// seconds, or until the bot posts; the activities refresh it every
// TypingInterval. It is of adapters.PriorityPreview: it never waits,
// and a refresh that cannot go now (the route's bucket down to the call
// kept for replies, the channel busy with them) is skipped.
func (c *Client) Typing(ctx context.Context, session pipeline.SessionKey, threadID string) error {
	channel, err := target(session, threadID, opTyping)
	if err != nil {
		return err
	}
	endpoint := discordgo.EndpointChannelTyping(channel)
	err = c.call(ctx, request{op: opTyping, method: http.MethodPost, url: endpoint, bucket: endpoint, channel: channel, priority: adapters.PriorityPreview}, nil)
	if adapters.Skipped(err) {
		return nil // typing is shown only when the channel has room to spare
	}
	return err
}

// request is one REST call.
type request struct {
	op, method, url, bucket string
	body                    any // sent as JSON; nil for none
	// files, when set, send body as payload_json with them (multipart).
	files  []*discordgo.File
	secret string // a token in url, kept out of errors
	wait   bool   // wait up to maxInlineWait for the bucket
	// channel is the channel the call is about ("" for none): it draws
	// on that channel's delivery budget, at priority.
	channel  string
	priority adapters.Priority
	// every spaces the calls of pace (a name for the calls so paced
	// together) in the channel; 0: the bucket Discord names is the only
	// pacing.
	every time.Duration
	pace  string
}

// Discord's global limit is 50 calls a second per bot, counted in
// windows of a second: 35 a second with 10 at once put at most 45 in
// one, which leaves room for the calls' jitter on their way and for the
// gateway's own few calls; previews leave 3 of them for replies.
var globalRule = budget.Rule{Every: time.Second / 35, Burst: 10, Reserve: 3}

// draws are what r costs in the delivery budget: a call of the bot's
// second, and the channel's turn (finals first), spaced by r.every.
func (r request) draws() []budget.Draw {
	d := []budget.Draw{{Key: "bot", Rule: globalRule, Cost: 1}}
	if r.channel != "" {
		d = append(d, budget.Draw{Key: "c" + r.channel})
		if r.every > 0 {
			d = append(d, budget.Draw{Key: r.pace + " " + r.channel, Rule: budget.Rule{Every: r.every, Burst: 1}, Cost: 1})
		}
	}
	return d
}

// call makes r through discordgo with the bucket taken here (see the
// notes at the top of this file) and decodes the answer into out, if
// any. Errors come back classified.
func (c *Client) call(ctx context.Context, r request, out any) error {
	var payload []byte
	contentType := "application/json"
	if r.body != nil {
		var err error
		if payload, err = discordgo.Marshal(r.body); err != nil {
			return &adapters.Error{Kind: adapters.Permanent, Op: r.op, Err: err}
		}
	}
	if len(r.files) > 0 {
		var err error
		if contentType, payload, err = discordgo.MultipartBodyWithJSON(r.body, r.files); err != nil {
			return &adapters.Error{Kind: adapters.Permanent, Op: r.op, Err: err}
		}
	}
	if err := c.budget.Take(ctx, r.priority, r.op, r.draws()...); err != nil {
		return err
	}
	bucket, release, err := c.take(ctx, r)
	if err != nil {
		return err
	}
	defer release()
	resp, err := c.dg.RequestWithLockedBucket(r.method, r.url, contentType, payload, bucket, 0, discordgo.WithContext(ctx))
	if err != nil {
		return classify(r.op, r.bucket, err, r.secret)
	}
	if out != nil && len(resp) > 0 {
		if err := discordgo.Unmarshal(resp, out); err != nil {
			return &adapters.Error{Kind: adapters.Transient, Op: r.op, Err: fmt.Errorf("Discord's answer is not the JSON expected: %w", err)}
		}
	}
	return nil
}

// take locks r's discordgo bucket once it has no wait left: it waits its
// turn among this client's calls with ctx, sleeps a short wait
// cancellably, and answers RateLimited for a longer one (or any, unless
// r.wait). release gives the turn back; RequestWithLockedBucket unlocks
// the bucket itself.
func (c *Client) take(ctx context.Context, r request) (*discordgo.Bucket, func(), error) {
	release, err := c.gate.enter(ctx, r.bucket)
	if err != nil {
		return nil, nil, &adapters.Error{Kind: adapters.Transient, Op: r.op, Err: err}
	}
	limiter := c.dg.Ratelimiter
	bucket := limiter.GetBucket(r.bucket)
	for {
		// Uncontended: every call on this session passes the gate first.
		bucket.Lock()
		if r.priority == adapters.PriorityPreview && limiter.GetWaitTime(bucket, 2) > 0 {
			// The route's last call is kept for a final.
			bucket.Unlock()
			release()
			return nil, nil, adapters.ErrSkipped
		}
		wait := limiter.GetWaitTime(bucket, 1)
		if wait <= 0 {
			bucket.Remaining--
			return bucket, release, nil
		}
		bucket.Unlock()
		if !r.wait || wait > maxInlineWait {
			release()
			return nil, nil, &adapters.Error{Kind: adapters.RateLimited, RetryAfter: wait, Op: r.op,
				Err: fmt.Errorf("Discord's rate limit on %s (or a global one) holds calls for %s", bucketName(r.bucket), wait.Round(time.Millisecond))}
		}
		if err := sleep(ctx, wait); err != nil {
			release()
			return nil, nil, &adapters.Error{Kind: adapters.Transient, Op: r.op, Err: err}
		}
	}
}

// bucketGate lets one call at a time use a bucket, waiting with a
// context. It keeps one channel per bucket it has seen, as discordgo
// keeps one Bucket, and forgets none: a bucket is a route of a channel
// (its messages, its reactions, its typing) or of the application, so
// the map is bounded by the channels this worker has answered in, a few
// per channel at about a hundred bytes each, as discordgo's own
// Ratelimiter is. Forgetting one that a call may still hold would let
// two calls use its bucket at once.
type bucketGate struct {
	mu    sync.Mutex
	turns map[string]chan struct{}
}

func newBucketGate() *bucketGate { return &bucketGate{turns: map[string]chan struct{}{}} }

func (g *bucketGate) enter(ctx context.Context, bucket string) (func(), error) {
	g.mu.Lock()
	turn, ok := g.turns[bucket]
	if !ok {
		turn = make(chan struct{}, 1)
		g.turns[bucket] = turn
	}
	g.mu.Unlock()
	select {
	case turn <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-turn }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
