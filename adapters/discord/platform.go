package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// DefaultAPIURL is Discord's REST API, as discordgo addresses it.
const DefaultAPIURL = "https://discord.com/api/v9/"

// Platform holds the REPLYFLOW_DISCORD_* settings, the gateway side of
// Discord (Serve) and its worker side (Outbound).
type Platform struct {
	// Token is the bot's token (Developer Portal, Bot tab); it turns
	// Discord on. Keep it secret.
	Token string `envconfig:"DISCORD_TOKEN"`
	// APIURL is the REST API (a fake in tests): every call discordgo
	// makes to DefaultAPIURL goes there instead, GET /gateway included,
	// whose answer names the WebSocket to dial.
	APIURL string `envconfig:"DISCORD_API_URL" default:"https://discord.com/api/v9/"`
	// ApplicationID is the application's ID, for answering button
	// presses through their webhooks; empty: the bot's user ID, which is
	// the application's for every application made since 2021.
	ApplicationID string `envconfig:"DISCORD_APPLICATION_ID"`
	// CatchupLimit, CatchupMaxAge and CatchupConversations bound the
	// catch-up after a READY: the most messages a channel hands on, the
	// oldest fetched, and the most conversations read (the most recently
	// active), so a restart costs at most their product in calls.
	CatchupLimit         int           `envconfig:"DISCORD_CATCHUP_LIMIT" default:"100"`
	CatchupMaxAge        time.Duration `envconfig:"DISCORD_CATCHUP_MAX_AGE" default:"24h"`
	CatchupConversations int           `envconfig:"DISCORD_CATCHUP_CONVERSATIONS" default:"200"`
	// Reactions overrides the lifecycle's emoji per state (done:🎉);
	// the rest keep pipeline.DefaultEmoji.
	Reactions map[string]string `envconfig:"DISCORD_REACTIONS"`
	// HTTPClient replaces the client of every call (tests); nil for one
	// that follows APIURL.
	HTTPClient *http.Client `ignored:"true"`
}

var (
	_ adapters.Platform = (*Platform)(nil)
	_ adapters.Chunker  = (*Platform)(nil)
)

// ChunkLimit is Discord's message limit.
func (p *Platform) ChunkLimit() int { return MessageLimit }

// Chunk cuts with pipeline.Chunk: Render never lengthens text, so a
// chunk cut to limit in Markdown fits once rendered.
func (p *Platform) Chunk(markdown string, limit int) []string { return pipeline.Chunk(markdown, limit) }

func (p *Platform) Channel() string     { return Channel }
func (p *Platform) Enabled() bool       { return p.Token != "" }
func (p *Platform) HowToEnable() string { return "REPLYFLOW_DISCORD_TOKEN" }

func (p *Platform) Summary() string {
	return "on (gateway); mention your bot in a channel, or DM it"
}

func (p *Platform) Validate() []error {
	if !p.Enabled() {
		return nil
	}
	var errs []error
	if strings.ContainsAny(strings.TrimPrefix(p.Token, "Bot "), " \t\r\n") {
		errs = append(errs, errors.New("REPLYFLOW_DISCORD_TOKEN must be the bot's token (Developer Portal, Bot tab), without spaces"))
	}
	if u, err := url.Parse(p.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, "/") {
		errs = append(errs, fmt.Errorf("REPLYFLOW_DISCORD_API_URL must be an http(s) URL ending in / like %s, got %q", DefaultAPIURL, p.APIURL))
	}
	if p.ApplicationID != "" && snowflakeValue(p.ApplicationID) == 0 {
		errs = append(errs, fmt.Errorf("REPLYFLOW_DISCORD_APPLICATION_ID must be the application's numeric ID, got %q", p.ApplicationID))
	}
	if p.CatchupLimit < 1 || p.CatchupLimit > 1000 {
		errs = append(errs, fmt.Errorf("REPLYFLOW_DISCORD_CATCHUP_LIMIT must be between 1 and 1000, got %d", p.CatchupLimit))
	}
	if p.CatchupMaxAge <= 0 || p.CatchupMaxAge > 14*24*time.Hour {
		errs = append(errs, fmt.Errorf("REPLYFLOW_DISCORD_CATCHUP_MAX_AGE must be positive and at most 336h, got %s", p.CatchupMaxAge))
	}
	if p.CatchupConversations < 1 || p.CatchupConversations > 10_000 {
		errs = append(errs, fmt.Errorf("REPLYFLOW_DISCORD_CATCHUP_CONVERSATIONS must be between 1 and 10000, got %d", p.CatchupConversations))
	}
	_, bad := adapters.ReactionOverrides("REPLYFLOW_DISCORD_REACTIONS", p.Reactions, ValidEmoji)
	return append(errs, bad...)
}

// Serve connects to Discord's gateway in the background, so that Discord
// being unreachable holds up no other platform, and keeps it connected
// until ctx is done. Serving.Failed reports a refusal no retry fixes (a
// wrong token, a shard, the API version, invalid intents); a refused
// Message Content Intent is shown on /healthz and retried within the
// identify budget, so enabling it in the Developer Portal is enough.
func (p *Platform) Serve(ctx context.Context, gw adapters.GatewaySide) (adapters.Serving, error) {
	g, err := NewGateway(GatewayConfig{
		Token: p.Token, HTTPClient: p.httpClient(),
		Sink: gw.Sink, Feedback: gw.Feedback, Sessions: gw.Sessions, Health: gw.Health, Logger: gw.Logger,
		CatchupLimit: p.CatchupLimit, CatchupMaxAge: p.CatchupMaxAge, CatchupConversations: p.CatchupConversations,
	})
	if err != nil {
		return adapters.Serving{}, err
	}
	gw.Health.Report(Channel, adapters.Health{State: adapters.StateConnecting})
	failed := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := g.Run(ctx); err != nil {
			failed <- err
		}
	}()
	// The gateway stops when ctx ends; Close waits for it to hand on what
	// it queued (its drain is bounded).
	return adapters.Serving{Failed: failed, Notify: g.Notify, Close: func() {
		select {
		case <-done:
		case <-time.After(defaultTuning().drain + 5*time.Second):
		}
	}}, nil
}

// Outbound is the worker side: the Client, which sends, edits, reacts and
// shows typing with the bot token.
func (p *Platform) Outbound(w adapters.WorkerSide) (adapters.Outbound, error) {
	emoji, _ := adapters.ReactionOverrides("REPLYFLOW_DISCORD_REACTIONS", p.Reactions, ValidEmoji) // Validate reported the bad ones
	return NewClient(ClientConfig{Token: p.Token, APIURL: p.APIURL, HTTPClient: p.HTTPClient, ApplicationID: p.ApplicationID, Emoji: emoji, Logger: w.Logger})
}

// TypingInterval is how often the worker refreshes typing: Discord shows
// it for 10 s.
func (p *Platform) TypingInterval() time.Duration { return TypingInterval }

// httpClient is the client every call goes through: the configured one,
// or one that sends what discordgo addresses to DefaultAPIURL to APIURL.
func (p *Platform) httpClient() *http.Client {
	if p.HTTPClient != nil {
		return p.HTTPClient
	}
	c, err := rebased(&http.Client{Timeout: 20 * time.Second}, p.APIURL)
	if err != nil {
		return nil // Validate reported it
	}
	return c
}
