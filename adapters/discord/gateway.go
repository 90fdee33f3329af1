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
	// CatchupConversations is the most conversations a catch-up reads,
	// the most recently active (200 when 0).
	CatchupConversations int
	// Now stamps messages; time.Now when nil.
	Now func() time.Time
}

// Gateway holds the connection to Discord's gateway and hands what it
// receives to a Receiver. discordgo's own reconnect is off: Run connects
// again itself, with backoff, so that each connection's end is logged and
// shown on /healthz, and a refusal is understood.
type Gateway struct {
	cfg  GatewayConfig
	tune tuning
	// session carries REST calls and the state the events fill; ws the
	// gateway connection. ws is replaced by a new discordgo session when
	// Discord ended its session and refused the IDENTIFY that followed:
	// discordgo would otherwise RESUME the dead session forever, and only
	// a fresh IDENTIFY in Open returns Discord's close code to Run. Each
	// RESUME has a new one too (resumeOnNewConnection), carrying the
	// Discord session, so an ended connection's goroutines cannot close it.
	session *discordgo.Session
	ws      atomic.Pointer[discordgo.Session]
	recv    *Receiver
	logger  *slog.Logger
	budget  *identifyBudget

	up        atomic.Bool   // between Connect and Disconnect
	conn      atomic.Uint64 // counts connections, for the watchdog
	lastEvent atomic.Int64  // UnixNano of the last dispatch
	interval  atomic.Int64  // the heartbeat interval the watchdog measured
	stopping  atomic.Bool
	ended     chan struct{} // a connection ended (cap 1)
	// handshake is how Discord answered the last Open (handshake*);
	// resumable says ws has a session Open RESUMEs rather than IDENTIFYs.
	handshake atomic.Int32
	resumable atomic.Bool
	answered  chan struct{} // READY or RESUMED after an op 9 (cap 1)
	// refusal is the /healthz error of the last refusal Run retries (4014)
	// until a session opens: the identify budget's hold repeats it.
	refusal atomic.Pointer[string]
}

// How Discord answered an Open.
const (
	handshakeOpening     = iota + 1 // Open runs: IDENTIFY or RESUME sent
	handshakeReady                  // READY: a new session
	handshakeResumed                // RESUMED: the session goes on
	handshakeInvalidated            // op 9: discordgo identified again on the connection, no READY yet
)

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
	if cfg.CatchupConversations <= 0 {
		cfg.CatchupConversations = 200
	}
	cfg.Logger = cfg.Logger.With("channel", Channel)
	cfg.HTTPClient = pacedClient(cfg.HTTPClient)
	s, err := newSession("Bot "+token, cfg)
	if err != nil {
		return nil, err
	}
	st := s.State
	st.MaxMessageCount = 0
	st.TrackEmojis, st.TrackStickers, st.TrackMembers, st.TrackThreadMembers = false, false, false, false
	st.TrackRoles, st.TrackVoice, st.TrackPresences = false, false, false
	g := &Gateway{cfg: cfg, tune: tune, session: s, logger: cfg.Logger, ended: make(chan struct{}, 1), answered: make(chan struct{}, 1),
		budget: newIdentifyBudget(tune.identifyBurst, tune.identifyEvery, time.Now)}
	g.recv = newReceiver(cfg, tune, s)
	if err := checkResumeFields(); err != nil {
		return nil, err
	}
	if err := g.newConnection(); err != nil {
		return nil, err
	}
	return g, nil
}

// newSession is a discordgo session set up as the gateway uses it; auth
// is "Bot " and the token.
func newSession(auth string, cfg GatewayConfig) (*discordgo.Session, error) {
	s, err := discordgo.New(auth)
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
	return s, nil
}

// newConnection makes ws a discordgo session without a Discord session,
// so its Open IDENTIFYs; its events fill the REST session's state.
func (g *Gateway) newConnection() error {
	ws, err := newSession(g.session.Token, g.cfg)
	if err != nil {
		return err
	}
	ws.State = g.session.State
	g.handle(ws)
	g.ws.Store(ws)
	g.resumable.Store(false)
	return nil
}

// resumeOnNewConnection makes ws a new discordgo session that RESUMEs
// the current one's Discord session (gateway_resume.go says why a
// connection that resumes needs a Session of its own). The one it
// replaces has no connection left; closing it again only emits a
// Disconnect the handler ignores.
func (g *Gateway) resumeOnNewConnection() error {
	old := g.ws.Load()
	ws, err := newSession(g.session.Token, g.cfg)
	if err != nil {
		return err
	}
	ws.State = g.session.State
	carryResume(old, ws)
	g.handle(ws)
	g.ws.Store(ws)
	_ = old.CloseWithCode(closeResumable) // keeps the Discord session, were a connection still open
	return nil
}

func (g *Gateway) handle(s *discordgo.Session) {
	r := g.recv
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Connect) {
		// Open emits Connect after the answer to its IDENTIFY or RESUME:
		// without READY or RESUMED before, the answer was op 9, and
		// discordgo has identified again on this connection.
		g.handshake.CompareAndSwap(handshakeOpening, handshakeInvalidated)
		g.conn.Add(1)
		g.up.Store(true)
	})
	s.AddHandler(func(s *discordgo.Session, e *discordgo.Disconnect) {
		if s == g.ws.Load() { // a replaced session's late close is not the connection's end
			g.onDisconnect()
		}
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Ready) {
		g.resumable.Store(true)
		switch g.handshake.Swap(handshakeReady) {
		case handshakeInvalidated:
			signal(g.answered)
		case handshakeReady, handshakeResumed:
			// An op 9 on a live connection: discordgo identified by
			// itself, without a token.
			g.budget.spend()
		}
		name := ""
		if e.User != nil {
			name = e.User.Username
			r.onReady(e.User.ID)
		}
		g.logger.Info("Discord gateway session started (READY): catching up on what the running sessions missed",
			"bot", r.botID(), "bot_name", name, "guilds", len(e.Guilds))
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Resumed) {
		if g.handshake.Swap(handshakeResumed) == handshakeInvalidated {
			signal(g.answered)
		}
		g.logger.Info("Discord gateway session resumed: Discord replays what it held back")
	})
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.InteractionCreate) { r.onInteraction(e.Interaction) })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		g.lastEvent.Store(time.Now().UnixNano())
		if e.Type == "MESSAGE_CREATE" {
			// Read here, not in a MessageCreate handler: discordgo hands
			// that an empty message when it cannot read the whole of it.
			if m := g.messageOf(e); m != nil {
				r.onMessage(m)
			}
			return
		}
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

// messageOf is a MESSAGE_CREATE's message: discordgo's when it read it
// (a message always has an ID), else e.RawData read again with only the
// fields replyflow uses (readMessage); nil when even that fails.
func (g *Gateway) messageOf(e *discordgo.Event) *discordgo.Message {
	if mc, ok := e.Struct.(*discordgo.MessageCreate); ok && mc.Message != nil && mc.ID != "" {
		return mc.Message
	}
	m, cause, err := readMessage(e.RawData)
	args := []any{"discord_channel", stringField(e.RawData, "channel_id"), "message", stringField(e.RawData, "id")}
	switch {
	case err != nil:
		g.logger.Warn("Discord message not understood; skipped", append(args, "error", err)...)
		return nil
	case cause != nil:
		g.logger.Warn("Discord message read without the fields replyflow does not use: discordgo could not read the whole of it", append(args, "error", cause)...)
	}
	return m
}

// Run connects and keeps the gateway connected until ctx is done, then
// closes it and lets the queued events reach the Sink (bounded). It
// returns an error only for a refusal no retry can fix (refusals), at
// the first connection or at any later one.
func (g *Gateway) Run(ctx context.Context) error {
	defer g.stop()
	go g.watch(ctx)
	for {
		err := connect.Until(ctx, func() error { return g.open(ctx) }, g.classify, g.failed)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			code := closeCode(err)
			r := refusals[code]
			g.report(adapters.Health{State: adapters.StateFailed, Error: r.health(err)})
			g.logger.Error(r.cause+"; "+r.fix+"; the Discord gateway stops (the other platforms keep working)", "close_code", code, "error", err)
			return fmt.Errorf("discord gateway: %s; %s: %w", r.cause, r.fix, err)
		}
		g.refusal.Store(nil)
		g.report(adapters.Health{State: adapters.StateUp})
		select {
		case <-ctx.Done():
			return nil
		case <-g.ended:
			g.report(adapters.Health{State: adapters.StateConnecting})
		}
	}
}

// open connects once. Every attempt takes a token of the identify budget
// first, since even a RESUME can end in an IDENTIFY (op 9), and gives it
// back when it resumed or never reached Discord. When Discord answers
// the RESUME with op 9, discordgo identifies on the same connection and
// Open returns before the answer: open waits for it, and when the
// connection ends instead, the answer was a refusal whose close code
// discordgo keeps to itself, so ws is replaced and the next attempt's
// IDENTIFY, made in Open, returns it.
func (g *Gateway) open(ctx context.Context) error {
	if wait, ok := g.budget.take(); !ok {
		return &heldError{until: time.Now().Add(wait), perDay: g.tune.identifyBurst + int(24*time.Hour/g.tune.identifyEvery)}
	}
	drain(g.ended)
	drain(g.answered)
	resuming := g.resumable.Load()
	if resuming {
		if err := g.resumeOnNewConnection(); err != nil {
			return err
		}
	}
	g.handshake.Store(handshakeOpening)
	err := g.ws.Load().Open()
	switch {
	case errors.Is(err, discordgo.ErrWSAlreadyOpen):
		g.budget.refund()
		g.handshake.Store(handshakeResumed) // the open connection carries the session
		return nil                          // a connection ended twice: the first reconnect already opened it
	case err != nil:
		if closeCode(err) == 0 {
			// GET /gateway, the dial or HELLO failed, before any
			// IDENTIFY (a connection lost right after one is the rare
			// exception the budget's margin covers).
			g.budget.refund()
		}
		return err
	}
	switch g.handshake.Load() {
	case handshakeResumed:
		g.budget.refund()
		return nil
	case handshakeReady:
		return nil
	}
	if !resuming {
		g.budget.spend() // the IDENTIFY after op 9 was the attempt's second
	}
	select {
	case <-g.answered:
		return nil
	case <-g.ended:
		if err := g.newConnection(); err != nil {
			return err
		}
		return errIdentifyRefused
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errIdentifyRefused is the end of a connection where Discord ended the
// session (op 9) and closed the connection after the IDENTIFY that
// followed, before any READY.
var errIdentifyRefused = errors.New("Discord ended the gateway session (op 9, invalid session) and closed the connection after the new IDENTIFY")

// heldError is an attempt the identify budget holds back; perDay is the
// most IDENTIFYs the budget lets through in 24 hours.
type heldError struct {
	until  time.Time
	perDay int
}

func (e *heldError) Error() string {
	return fmt.Sprintf("next IDENTIFY held until %s by the identify budget (at most %d a day per gateway; Discord resets the token after 1,000)",
		e.until.Format(time.RFC3339), e.perDay)
}

// refusal is what a close code no reconnect fixes means: the cause, what
// to do, and whether Run tries again (a fix outside the process, in the
// Developer Portal) or stops.
type refusal struct {
	cause, fix string
	retry      bool
}

func (r refusal) health(err error) string { return r.cause + ": " + r.fix + " (" + err.Error() + ")" }

// refusals are Discord's close codes that no RESUME or reconnect fixes,
// wherever they come: answering the first IDENTIFY, or the one after a
// refused RESUME.
var refusals = map[int]refusal{
	4004: {cause: "Discord refused the bot token (close 4004)", fix: "check REPLYFLOW_DISCORD_TOKEN (Developer Portal, Bot tab, Reset Token)"},
	4010: {cause: "Discord refused the shard the gateway asked for (close 4010)", fix: "the gateway runs one shard; report this as a bug"},
	4011: {cause: "Discord requires sharding: the bot is in too many servers for one connection (close 4011)", fix: "the gateway runs one shard; keep the bot in fewer servers (under 2,500)"},
	4012: {cause: "Discord no longer accepts the gateway API version this build speaks (close 4012)", fix: "upgrade replyflow"},
	4013: {cause: "Discord found the intents the gateway asked for invalid (close 4013)", fix: "upgrade replyflow; report this as a bug"},
	4014: {cause: "Discord refused the gateway connection: the bot asks for the Message Content Intent, which this application may not use (close 4014)",
		fix: MessageContentHint + " (Privileged Gateway Intents); the gateway tries again by itself", retry: true},
}

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

// classify stops Run at a refusal no retry fixes, and waits out the
// identify budget's hold.
func (g *Gateway) classify(err error) (bool, time.Duration) {
	var held *heldError
	if errors.As(err, &held) {
		return false, time.Until(held.until)
	}
	r, refused := refusals[closeCode(err)]
	return refused && !r.retry, 0
}

func (g *Gateway) failed(n int, next time.Time, err error) {
	at := "next_attempt_at"
	var held *heldError
	switch r, refused := refusals[closeCode(err)]; {
	case errors.As(err, &held):
		g.logger.Warn("Discord IDENTIFY held: the identify budget is spent, so the gateway waits rather than risk the token (Discord resets it after 1,000 a day)",
			"attempt", n, at, next.Format(time.RFC3339))
		h := adapters.Health{State: adapters.StateConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next}
		if last := g.refusal.Load(); last != nil {
			h.State, h.Error = adapters.StateFailed, *last+"; "+err.Error()
		}
		g.report(h)
	case refused:
		g.logger.Error(r.cause+"; "+r.fix, "attempt", n, at, next.Format(time.RFC3339), "error", err)
		text := r.health(err)
		g.refusal.Store(&text)
		g.report(adapters.Health{State: adapters.StateFailed, Error: text, Attempts: n, NextAttemptAt: &next})
	case errors.Is(err, errIdentifyRefused):
		g.logger.Warn("Discord ended the gateway session and closed the connection after the new IDENTIFY; identifying on a new session to learn why",
			"attempt", n, at, next.Format(time.RFC3339))
		g.report(adapters.Health{State: adapters.StateConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next})
	default:
		g.logger.Error("Discord gateway unreachable; the other platforms keep working, trying again (check the network and REPLYFLOW_DISCORD_API_URL)",
			"attempt", n, at, next.Format(time.RFC3339), "error", err)
		g.report(adapters.Health{State: adapters.StateConnecting, Error: err.Error(), Attempts: n, NextAttemptAt: &next})
	}
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
	defer signal(g.ended)
	if g.handshake.Load() == handshakeInvalidated {
		return // open waits for this connection's answer, and reports it
	}
	ws := g.ws.Load()
	ws.RLock()
	ack := ws.LastHeartbeatAck
	ws.RUnlock()
	quiet := time.Since(g.lastActivity(ack)).Round(time.Millisecond)
	if interval := time.Duration(g.interval.Load()); interval > 0 && quiet > 2*interval {
		g.logger.Warn("Discord gateway connection was connected but silent (no heartbeat ACK, no event); it is replaced by a new one",
			"silent_for", quiet, "heartbeat_interval", interval)
	} else {
		g.logger.Warn("Discord gateway connection closed; connecting again", "last_heartbeat_ack_ago", time.Since(ack).Round(time.Millisecond))
	}
}

// signal wakes a waiter on ch (cap 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// drain forgets a signal nobody waited for.
func drain(ch chan struct{}) {
	select {
	case <-ch:
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
	_ = g.ws.Load().Close() // ShouldReconnectOnError is false from the start: no reconnect follows
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
