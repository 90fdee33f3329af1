package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/connect"
	"github.com/replyflow/replyflow/pipeline"
)

// Intents are what the gateway asks Discord for: guilds (channels and
// threads), guild and direct messages and their reactions, and the
// privileged MESSAGE_CONTENT, without which guild messages arrive empty.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsGuildMessageReactions |
	discordgo.IntentsDirectMessages | discordgo.IntentsDirectMessageReactions | discordgo.IntentMessageContent

// GatewayConfig configures the gateway side.
type GatewayConfig struct {
	// Token is the bot token, with or without "Bot ".
	Token string
	// HTTPClient carries every REST call, GET /gateway (which names the
	// WebSocket to dial) included; nil for discordgo's.
	HTTPClient *http.Client
	Sink       adapters.Sink
	// Feedback takes reactions on the bot's messages; nil ignores them.
	Feedback adapters.FeedbackSink
	// Sessions lists the running sessions for the catch-up after a
	// READY; nil turns the catch-up off.
	Sessions adapters.SessionLister
	Health   adapters.HealthReporter
	Logger   *slog.Logger
	// CatchupLimit is the most messages a channel's catch-up hands on
	// (100 when 0); CatchupMaxAge the oldest it fetches (24h when 0).
	CatchupLimit  int
	CatchupMaxAge time.Duration
	// Now stamps messages; time.Now when nil.
	Now func() time.Time
}

// Gateway holds the connection to Discord's gateway and hands what it
// receives to a Receiver. discordgo's own reconnect is off: Run connects
// again itself, with backoff, so that each connection's end is logged and
// shown on /healthz, and a refusal is understood.
type Gateway struct {
	cfg     GatewayConfig
	tune    tuning
	session *discordgo.Session
	recv    *Receiver
	logger  *slog.Logger

	up        atomic.Bool   // between Connect and Disconnect
	conn      atomic.Uint64 // counts connections, for the watchdog
	lastEvent atomic.Int64  // UnixNano of the last dispatch
	interval  atomic.Int64  // the heartbeat interval the watchdog measured
	stopping  atomic.Bool
	ended     chan struct{} // a connection ended (cap 1)
}

// NewGateway checks the config and prepares the session; Run connects.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	return newGateway(cfg, defaultTuning())
}

func newGateway(cfg GatewayConfig, tune tuning) (*Gateway, error) {
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	switch {
	case cfg.Sink == nil:
		return nil, errors.New("discord gateway: no sink")
	case token == "":
		return nil, errors.New("discord gateway: no token")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CatchupLimit <= 0 {
		cfg.CatchupLimit = 100
	}
	if cfg.CatchupMaxAge <= 0 {
		cfg.CatchupMaxAge = 24 * time.Hour
	}
	cfg.Logger = cfg.Logger.With("channel", Channel)
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord gateway: %w", err)
	}
	if cfg.HTTPClient != nil {
		s.Client = cfg.HTTPClient
	}
	// Retries are the receiver's, bounded and logged; discordgo's would
	// sleep out a 429 whatever the context says.
	s.ShouldRetryOnRateLimit, s.MaxRestRetries = false, 0
	s.ShouldReconnectOnError = false
	// A handshake that hangs must not hold Run (and a stop) for
	// websocket's default 45 s.
	s.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 10 * time.Second}
	// Handlers run in order on the reader, so a channel's messages are
	// queued in the order Discord sent them; each returns at once or
	// after enqueueWait at most.
	s.SyncEvents = true
	s.Identify.Intents = Intents
	s.LogLevel = -1 // what matters is logged here, through slog
	st := s.State
	st.MaxMessageCount = 0
	st.TrackEmojis, st.TrackStickers, st.TrackMembers, st.TrackThreadMembers = false, false, false, false
	st.TrackRoles, st.TrackVoice, st.TrackPresences = false, false, false
	g := &Gateway{cfg: cfg, tune: tune, session: s, logger: cfg.Logger, ended: make(chan struct{}, 1)}
	g.recv = newReceiver(cfg, tune, s)
	g.handle()
	return g, nil
}

func (g *Gateway) handle() {
	s, r := g.session, g.recv
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Connect) {
		g.conn.Add(1)
		g.up.Store(true)
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Disconnect) { g.onDisconnect() })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Ready) {
		name := ""
		if e.User != nil {
			name = e.User.Username
			r.onReady(e.User.ID)
		}
		g.logger.Info("Discord gateway session started (READY): catching up on what the running sessions missed",
			"bot", r.botID(), "bot_name", name, "guilds", len(e.Guilds))
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Resumed) {
		g.logger.Info("Discord gateway session resumed: Discord replays what it held back")
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageCreate) { r.onMessage(e.Message) })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.InteractionCreate) { r.onInteraction(e.Interaction) })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		g.lastEvent.Store(time.Now().UnixNano())
		if e.Type != "MESSAGE_REACTION_ADD" {
			return
		}
		// discordgo's MessageReactionAdd leaves out message_author_id,
		// which says whether the reaction is on the bot's message.
		var x Reaction
		if err := json.Unmarshal(e.RawData, &x); err != nil {
			g.logger.Warn("Discord reaction not understood; skipped", "error", err)
			return
		}
		r.onReaction(x)
	})
}

// Run connects and keeps the gateway connected until ctx is done, then
// closes it and lets the queued events reach the Sink (bounded). It
// returns an error only for a refusal no retry can fix: a wrong token.
func (g *Gateway) Run(ctx context.Context) error {
	defer g.stop()
	go g.watch(ctx)
	for {
		err := connect.Until(ctx, g.open, refusedForGood, g.failed)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			g.report(adapters.Health{State: adapters.StateFailed, Error: err.Error()})
			g.logger.Error("Discord refused the bot token; check REPLYFLOW_DISCORD_TOKEN (Developer Portal, Bot tab, Reset Token)", "error", err)
			return fmt.Errorf("discord gateway: Discord refused the token (check REPLYFLOW_DISCORD_TOKEN): %w", err)
		}
		g.report(adapters.Health{State: adapters.StateUp})
		select {
		case <-ctx.Done():
			return nil
		case <-g.ended:
			g.report(adapters.Health{State: adapters.StateConnecting})
		}
	}
}

func (g *Gateway) open() error {
	err := g.session.Open()
	if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
		return nil // a connection ended twice: the first reconnect already opened it
	}
	return err
}

// Close codes Discord ends a connection with that no retry fixes:
// authentication failed, invalid shard, sharding required, invalid API
// version, invalid intents. 4014 (disallowed intents) is not among them:
// enabling the intent in the Developer Portal fixes it without a restart.
var permanentCloses = map[int]bool{4004: true, 4010: true, 4011: true, 4012: true, 4013: true}

const closeDisallowedIntents = 4014

// MessageContentHint is what /healthz and the log say when Discord
// refuses the Message Content Intent.
const MessageContentHint = "enable the Message Content Intent in the Developer Portal, Bot tab"

func closeCode(err error) int {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return 0
}

func refusedForGood(err error) (bool, time.Duration) {
	return permanentCloses[closeCode(err)], 0
}

func (g *Gateway) failed(n int, next time.Time, err error) {
	if closeCode(err) == closeDisallowedIntents {
		g.logger.Error("Discord refused the gateway connection: the bot asks for the Message Content Intent, which this application may not use; "+
			MessageContentHint+" (Privileged Gateway Intents); the gateway tries again by itself",
			"attempt", n, "next_attempt_at", next.Format(time.RFC3339), "error", err)
		g.report(adapters.Health{State: adapters.StateFailed, Error: MessageContentHint + " (close 4014: Disallowed intent(s))", Attempts: n, NextAttemptAt: &next})
		return
	}
	g.logger.Error("Discord gateway unreachable; the other platforms keep working, trying again (check the network and REPLYFLOW_DISCORD_API_URL)",
		"attempt", n, "next_attempt_at", next.Format(time.RFC3339), "error", err)
	g.report(adapters.Health{State: adapters.StateConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next})
}

func (g *Gateway) report(h adapters.Health) {
	if g.cfg.Health != nil {
		g.cfg.Health.Report(Channel, h)
	}
}

// onDisconnect runs when discordgo closed a connection: it read an
// error, its heartbeat went unanswered 5 times, Discord asked it to
// reconnect (op 7), or the watchdog closed a silent one. Run connects
// again: a RESUME gets what Discord held back, a new session (READY) the
// catch-up.
func (g *Gateway) onDisconnect() {
	if !g.up.Swap(false) || g.stopping.Load() {
		return // the same connection closed twice, or the gateway stops
	}
	g.session.RLock()
	ack := g.session.LastHeartbeatAck
	g.session.RUnlock()
	quiet := time.Since(g.lastActivity(ack)).Round(time.Millisecond)
	if interval := time.Duration(g.interval.Load()); interval > 0 && quiet > 2*interval {
		g.logger.Warn("Discord gateway connection was connected but silent (no heartbeat ACK, no event); it is replaced by a new one",
			"silent_for", quiet, "heartbeat_interval", interval)
	} else {
		g.logger.Warn("Discord gateway connection closed; connecting again", "last_heartbeat_ack_ago", time.Since(ack).Round(time.Millisecond))
	}
	select {
	case g.ended <- struct{}{}:
	default:
	}
}

func (g *Gateway) lastActivity(ack time.Time) time.Time {
	if last := time.Unix(0, g.lastEvent.Load()); last.After(ack) {
		return last
	}
	return ack
}

// stop closes the connection for good (code 1000: Discord ends the
// session) and drains the receiver.
func (g *Gateway) stop() {
	g.stopping.Store(true)
	_ = g.session.Close() // ShouldReconnectOnError is false from the start: no reconnect follows
	g.recv.stop()
}

// Notify posts text as a plain message in in's thread, else its channel
// (a DM's too), through the gateway's REST session: the gateway's
// slow-down notice (adapters.Serving.Notify).
func (g *Gateway) Notify(ctx context.Context, in pipeline.Inbound, text string) error {
	channel := in.ThreadID
	if channel == "" {
		channel = in.ChatID
	}
	if _, err := g.session.ChannelMessageSend(channel, text, discordgo.WithContext(ctx)); err != nil {
		return fmt.Errorf("notify in Discord channel %s: %w", channel, err)
	}
	return nil
}
