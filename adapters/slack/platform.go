package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/connect"
	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
)

// Platform holds the REPLYFLOW_SLACK_* settings, the gateway side of Slack
// (Serve) and its worker side (Outbound, the Client).
type Platform struct {
	// BotToken (xoxb-...) turns Slack on; keep it secret.
	BotToken string `envconfig:"SLACK_BOT_TOKEN"`
	// Mode is socket (Socket Mode, needs AppToken) or events (the Events
	// API and interactivity URLs on the gateway's server, need
	// SigningSecret).
	Mode              string        `envconfig:"SLACK_MODE" default:"socket"`
	AppToken          string        `envconfig:"SLACK_APP_TOKEN"`
	SigningSecret     string        `envconfig:"SLACK_SIGNING_SECRET"`
	EventsPath        string        `envconfig:"SLACK_EVENTS_PATH" default:"/slack/events"`
	InteractivityPath string        `envconfig:"SLACK_INTERACTIVITY_PATH" default:"/slack/interactivity"`
	ReplyInThread     string        `envconfig:"SLACK_REPLY_IN_THREAD" default:"threaded"`
	APIURL            string        `envconfig:"SLACK_API_URL" default:"https://slack.com/api/"`
	StaleAfter        time.Duration `envconfig:"SLACK_SOCKET_STALE_AFTER" default:"2m"`
	// PostInterval is the least time between two posts in one channel
	// (0: none).
	PostInterval time.Duration `envconfig:"SLACK_POST_INTERVAL" default:"1s"`
	// Reactions overrides the lifecycle's shortcodes per state
	// (done:tada); the rest keep Shortcodes'.
	Reactions map[string]string `envconfig:"SLACK_REACTIONS"`
	// CatchupLimit, CatchupMaxAge and CatchupConversations bound the
	// catch-up from the conversations' history (CatchupBounds).
	CatchupLimit         int           `envconfig:"SLACK_CATCHUP_LIMIT" default:"100"`
	CatchupMaxAge        time.Duration `envconfig:"SLACK_CATCHUP_MAX_AGE" default:"24h"`
	CatchupConversations int           `envconfig:"SLACK_CATCHUP_CONVERSATIONS" default:"200"`
}

var (
	_ adapters.Platform = (*Platform)(nil)
	_ adapters.Chunker  = (*Platform)(nil)
)

// ChunkLimit is Slack's message limit, counted on the rendered mrkdwn.
func (p *Platform) ChunkLimit() int { return mrkdwn.MessageLimit }

// Chunk cuts a reply so that each chunk fits limit once the Client
// renders it as mrkdwn, which may lengthen it (escapes).
func (p *Platform) Chunk(markdown string, limit int) []string { return mrkdwn.Chunk(markdown, limit) }

// Outbound is the worker side: the Client, which posts, edits, reacts and
// shows the assistant status with the bot token.
func (p *Platform) Outbound(w adapters.WorkerSide) (adapters.Outbound, error) {
	interval := p.PostInterval
	if interval == 0 {
		interval = -1 // the Client's "none"
	}
	shortcodes, _ := adapters.ReactionOverrides("REPLYFLOW_SLACK_REACTIONS", p.Reactions, validShortcode) // Validate reported the bad ones
	return NewClient(ClientConfig{Token: p.BotToken, APIURL: p.APIURL, PostInterval: interval, Shortcodes: shortcodes, Logger: w.Logger})
}

func (p *Platform) Channel() string     { return Channel }
func (p *Platform) Enabled() bool       { return p.BotToken != "" }
func (p *Platform) HowToEnable() string { return "REPLYFLOW_SLACK_BOT_TOKEN" }

func (p *Platform) Summary() string {
	if p.Mode == "events" {
		return fmt.Sprintf("on (Events API at %s and %s); mention your app in a channel", p.EventsPath, p.InteractivityPath)
	}
	return "on (Socket Mode); mention your app in a channel"
}

func (p *Platform) Validate() []error {
	if !p.Enabled() {
		return nil
	}
	var errs []error
	if !strings.HasPrefix(p.BotToken, "xoxb-") {
		errs = append(errs, errors.New("REPLYFLOW_SLACK_BOT_TOKEN must be a bot token (xoxb-...), from OAuth & Permissions"))
	}
	switch p.Mode {
	case "socket":
		if !strings.HasPrefix(p.AppToken, "xapp-") {
			errs = append(errs, errors.New("REPLYFLOW_SLACK_APP_TOKEN must be an app-level token (xapp-...) with connections:write in socket mode"))
		}
		if p.StaleAfter <= 0 {
			errs = append(errs, fmt.Errorf("REPLYFLOW_SLACK_SOCKET_STALE_AFTER must be positive, got %s", p.StaleAfter))
		}
	case "events":
		if p.SigningSecret == "" {
			errs = append(errs, errors.New("REPLYFLOW_SLACK_SIGNING_SECRET is required in events mode (Basic Information, App Credentials)"))
		}
		for _, setting := range []struct{ name, path string }{
			{"REPLYFLOW_SLACK_EVENTS_PATH", p.EventsPath},
			{"REPLYFLOW_SLACK_INTERACTIVITY_PATH", p.InteractivityPath},
		} {
			if len(setting.path) < 2 || setting.path[0] != '/' {
				errs = append(errs, fmt.Errorf("%s must be a path like /slack/events, got %q", setting.name, setting.path))
			}
		}
		if p.EventsPath == p.InteractivityPath {
			errs = append(errs, errors.New("REPLYFLOW_SLACK_EVENTS_PATH and REPLYFLOW_SLACK_INTERACTIVITY_PATH must differ"))
		}
	default:
		errs = append(errs, fmt.Errorf("REPLYFLOW_SLACK_MODE must be socket or events, got %q", p.Mode))
	}
	if p.CatchupLimit < 1 || p.CatchupLimit > 1000 {
		errs = append(errs, fmt.Errorf("REPLYFLOW_SLACK_CATCHUP_LIMIT must be between 1 and 1000, got %d", p.CatchupLimit))
	}
	if p.CatchupMaxAge <= 0 || p.CatchupMaxAge > 14*24*time.Hour {
		errs = append(errs, fmt.Errorf("REPLYFLOW_SLACK_CATCHUP_MAX_AGE must be positive and at most 336h, got %s", p.CatchupMaxAge))
	}
	if p.CatchupConversations < 1 || p.CatchupConversations > 10_000 {
		errs = append(errs, fmt.Errorf("REPLYFLOW_SLACK_CATCHUP_CONVERSATIONS must be between 1 and 10000, got %d", p.CatchupConversations))
	}
	if _, err := ParseReplyMode(p.ReplyInThread); err != nil {
		errs = append(errs, err)
	}
	_, bad := adapters.ReactionOverrides("REPLYFLOW_SLACK_REACTIONS", p.Reactions, validShortcode)
	return append(errs, bad...)
}

// Serve connects the gateway to Slack in the background, so that Slack
// being unreachable holds up no other platform: it asks auth.test who the
// bot is until Slack answers, then in events mode serves the two URLs it
// mounted on the gateway's mux (503 until then, and Slack retries), in
// socket mode runs the Socket Mode receiver until ctx is done.
// Serving.Failed reports a refusal no retry can fix (a wrong token).
func (p *Platform) Serve(ctx context.Context, gw adapters.GatewaySide) (adapters.Serving, error) {
	failed := make(chan error, 1)
	var events, interactivity atomic.Pointer[http.Handler]
	if p.Mode == "events" {
		gw.WebhookMux().Handle("POST "+p.EventsPath, untilReady(&events))
		gw.WebhookMux().Handle("POST "+p.InteractivityPath, untilReady(&interactivity))
	}
	gw.Health.Report(Channel, adapters.Health{State: adapters.StateConnecting})
	var connected atomic.Pointer[slack.Client]
	go func() {
		err := p.run(ctx, gw, &connected, func(e, i http.Handler) { events.Store(&e); interactivity.Store(&i) })
		if err != nil && ctx.Err() == nil {
			gw.Health.Report(Channel, adapters.Health{State: adapters.StateFailed, Error: err.Error()})
			failed <- err
		}
	}()
	notify := func(ctx context.Context, in pipeline.Inbound, text string) error {
		api := connected.Load()
		if api == nil {
			return errors.New("slack is not connected yet")
		}
		return Notify(ctx, api, in, text)
	}
	return adapters.Serving{Failed: failed, Notify: notify}, nil
}

// Notify posts text as a plain message in in's channel, in its thread
// when it has one (where the answer would have gone): the gateway's
// slow-down notice (adapters.Serving.Notify).
func Notify(ctx context.Context, api *slack.Client, in pipeline.Inbound, text string) error {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if in.ThreadID != "" {
		opts = append(opts, slack.MsgOptionTS(in.ThreadID))
	}
	if _, _, err := api.PostMessageContext(ctx, in.ChatID, opts...); err != nil {
		return fmt.Errorf("notify in Slack channel %s: %w", in.ChatID, err)
	}
	return nil
}

func untilReady(h *atomic.Pointer[http.Handler]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loaded := h.Load(); loaded != nil {
			(*loaded).ServeHTTP(w, r)
			return
		}
		http.Error(w, "the gateway is not connected to Slack yet; deliver the event again", http.StatusServiceUnavailable)
	})
}

func (p *Platform) run(ctx context.Context, gw adapters.GatewaySide, connected *atomic.Pointer[slack.Client], serve func(events, interactivity http.Handler)) error {
	mode, err := ParseReplyMode(p.ReplyInThread)
	if err != nil {
		return err
	}
	api := slack.New(p.BotToken, slack.OptionAPIURL(p.APIURL))
	var auth *slack.AuthTestResponse
	err = untilConnected(ctx, gw, func() (err error) {
		auth, err = api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return err
	}
	connected.Store(api)
	rcv, err := NewReceiver(ReceiverConfig{
		Bot: Identity{UserID: auth.UserID, BotID: auth.BotID}, Mode: mode,
		Sink: gw.Sink, Feedback: gw.Feedback, Logger: gw.Logger,
		CountMembers: ConversationMembers(api),
	})
	if err != nil {
		return err
	}
	bounds := CatchupBounds{Conversations: p.CatchupConversations, Limit: p.CatchupLimit, MaxAge: p.CatchupMaxAge}
	if p.Mode == "events" {
		serve(rcv.EventsHandler(p.SigningSecret, nil), rcv.InteractivityHandler(p.SigningSecret, nil))
		gw.Health.Report(Channel, adapters.Health{State: adapters.StateUp})
		gw.Logger.Info("Slack connected", "mode", "events", "events_path", p.EventsPath, "interactivity_path", p.InteractivityPath, "team", auth.TeamID, "bot", auth.UserID)
		return rcv.RunCatchup(ctx, CatchupConfig{BotToken: p.BotToken, APIURL: p.APIURL, Sessions: gw.Sessions, Team: auth.TeamID, Bounds: bounds})
	}
	gw.Logger.Info("Slack connecting over Socket Mode", "team", auth.TeamID, "bot", auth.UserID)
	return rcv.RunSocket(ctx, SocketConfig{AppToken: p.AppToken, BotToken: p.BotToken, APIURL: p.APIURL, StaleAfter: p.StaleAfter, Health: gw.Health,
		Sessions: gw.Sessions, Team: auth.TeamID, Catchup: bounds})
}

// untilConnected runs attempt until it succeeds, ctx is done, or Slack
// refuses the token (an ok:false answer, returned). Each other failure is
// logged with the time of the next attempt and shown on /healthz.
func untilConnected(ctx context.Context, gw adapters.GatewaySide, attempt func() error) error {
	err := connect.Until(ctx, attempt, func(err error) (bool, time.Duration) {
		var refused slack.SlackErrorResponse
		var limited *slack.RateLimitedError
		if errors.As(err, &limited) {
			return false, limited.RetryAfter
		}
		return errors.As(err, &refused), 0
	}, func(n int, next time.Time, err error) {
		gw.Logger.Error("Slack unreachable; the other platforms keep working, trying again (check the network and REPLYFLOW_SLACK_API_URL)",
			"attempt", n, "next_attempt_at", next.Format(time.RFC3339), "error", err)
		gw.Health.Report(Channel, adapters.Health{State: adapters.StateConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next})
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("ask Slack who the bot is (auth.test): Slack refused (check REPLYFLOW_SLACK_BOT_TOKEN and REPLYFLOW_SLACK_API_URL): %w", err)
	}
	return err
}

// validShortcode accepts an emoji name as reactions.add takes it: lower
// case letters, digits and - _ + ', without the colons.
func validShortcode(name string) error {
	if name == "" || len(name) > 100 {
		return fmt.Errorf("%q is not an emoji name (like eyes or white_check_mark)", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-_+'", r)) {
			return fmt.Errorf("%q is not an emoji name (like eyes or white_check_mark, without colons)", name)
		}
	}
	return nil
}
