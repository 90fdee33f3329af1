// Package discordtest is a fake Discord for tests: the REST routes the
// adapter uses, as discordgo sends them (nonce-deduplicated sends, soft
// replies, allowed mentions, buttons, edits, history, reactions, typing,
// channels, guild member counts, interaction callbacks and follow-ups);
// a gateway WebSocket speaking HELLO, IDENTIFY, READY, RESUME and
// heartbeats and dispatching MESSAGE_CREATE, MESSAGE_REACTION_ADD and
// INTERACTION_CREATE; injectable faults; and a record of every call.
//
// Point discordgo at it with session.Client = fake.Client(): that client
// sends every request to the fake whatever its host, so discordgo's
// endpoint variables (package globals, computed at init) stay untouched
// and fakes in parallel tests do not share state. GET /gateway answers the
// fake's WebSocket address, which discordgo dials with session.Dialer.
// Where a URL is wanted instead (a gateway process in another process),
// APIURL has the same shape as discordgo.EndpointAPI.
//
// The fake checks what Discord checks where a mistake would pass
// unnoticed otherwise: nonces longer than 25 characters, custom_id longer
// than 100, content longer than 2000 characters (counted in code points),
// a reply to a missing message without fail_if_not_exists: false, an
// interaction answered twice or after InteractionDeadline, an IDENTIFY
// asking for MESSAGE_CONTENT the application was not granted (close 4014).
// A session that does not ask for it gets guild messages with empty
// content, except those mentioning the bot, as Discord sends them.
//
// Sessions live until the client closes with 1000 or 1001 (as on
// Discord; not its answer to a close the fake sent) or InvalidateSessions;
// CloseConnections ends connections with a close code, RefuseIdentifies
// closes IDENTIFYs with one (4004, 4010 to 4014), so a RESUME refused with
// op 9 can be followed by a refused IDENTIFY, as after an intent is
// switched off: what a session misses while no
// connection carries it is replayed on RESUME, never after a fresh
// IDENTIFY, so "posted while the gateway was down" reaches a new session
// only through the REST history. Not modelled: the fake's own rate
// limits (only FailNext answers 429), uploads, the deferred message of
// callback type 5 (recorded only), with_response on callbacks,
// zlib-compressed gateway frames (discordgo asks for compress but takes
// text), and emoji normalisation (a reaction is stored as sent, with or
// without U+FE0F).
package discordtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters/internal/changes"
)

// Options configure a fake; zero fields take the defaults New names.
type Options struct {
	Token         string // the bot token without "Bot "; "test-token"
	BotID         string // the bot's user ID; "900000000000000001"
	BotName       string // "replyflow"
	ApplicationID string // the application's ID; BotID, as for apps made today
	// HeartbeatInterval is the interval HELLO announces (Discord: 41.25s;
	// tests want it short). 1s.
	HeartbeatInterval time.Duration
	// NonceWindow is how long an enforced nonce is remembered per channel
	// ("the past few minutes", Discord says). 5m.
	NonceWindow time.Duration
	// InteractionDeadline is how long an interaction can be answered (its
	// callback); Discord gives 3s. Follow-ups through the interaction's
	// webhook work for 15 minutes.
	InteractionDeadline time.Duration
	// DenyMessageContent makes the application lack the privileged
	// MESSAGE_CONTENT intent: an IDENTIFY asking for it is closed with
	// 4014, and messages read over REST have empty content, except in
	// DMs, the bot's own and those mentioning the bot.
	DenyMessageContent bool
	// Now is the fake's clock: snowflakes, timestamps, the nonce window,
	// interaction deadlines. time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&o.Token, "test-token")
	def(&o.BotID, "900000000000000001")
	def(&o.BotName, "replyflow")
	def(&o.ApplicationID, o.BotID)
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = time.Second
	}
	if o.NonceWindow <= 0 {
		o.NonceWindow = 5 * time.Minute
	}
	if o.InteractionDeadline <= 0 {
		o.InteractionDeadline = 3 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Server is a fake Discord on 127.0.0.1. It keeps guilds, channels,
// messages, reactions, interactions and gateway sessions in memory, and
// records every call. Nothing is bounded or expires but nonces and
// interactions: a fake lives for one test; request bodies are read up to
// 8 MiB.
type Server struct {
	Options

	http *httptest.Server

	mu           sync.Mutex
	cdnServed    int          // bytes served by the CDN route (cdn.go)
	feed         changes.Feed // wakes WaitFor on every change
	lastID       uint64       // the last snowflake handed out
	guilds       map[string]*Guild
	channels     map[string]*channelState
	users        map[string]User
	calls        []Call
	faults       map[string][]Fault
	limits       *limiter // nil: no rate limits (EnforceLimits)
	limited      int      // calls answered 429 by limits
	typing       []typingCall
	nonces       map[nonceKey]nonceEntry
	interactions map[string]*interactionState
	responses    []InteractionResponse
	ephemera     []Ephemeral
	gw           gatewayState
}

// Call is one REST request the fake received.
type Call struct {
	// Route is the route's pattern, one of the Route constants, or ""
	// for a route the fake does not know (answered 404).
	Route  string
	Method string
	Path   string            // unescaped, without /api/v{n}
	Vars   map[string]string // the route's variables: channel, message, emoji…
	Query  url.Values
	Body   map[string]any // the JSON body decoded; nil without one
	Raw    []byte         // the body as sent (a multipart body's payload_json)
	Auth   string         // the Authorization header
	// Files are a multipart body's files, in order.
	Files []Attachment
	// Status is the HTTP status answered, 0 when the fake hung up; Code
	// Discord's JSON error code when there was one.
	Status int
	Code   int
	At     time.Time
}

// The routes the fake serves, as Call.Route and FailNext name them.
const (
	RouteGateway     = "GET /gateway"
	RouteGatewayBot  = "GET /gateway/bot"
	RouteMe          = "GET /users/@me"
	RouteChannel     = "GET /channels/{channel}"
	RouteGuild       = "GET /guilds/{guild}"
	RouteSend        = "POST /channels/{channel}/messages"
	RouteHistory     = "GET /channels/{channel}/messages"
	RouteGetMessage  = "GET /channels/{channel}/messages/{message}"
	RouteEdit        = "PATCH /channels/{channel}/messages/{message}"
	RouteReact       = "PUT /channels/{channel}/messages/{message}/reactions/{emoji}/@me"
	RouteUnreact     = "DELETE /channels/{channel}/messages/{message}/reactions/{emoji}/@me"
	RouteTyping      = "POST /channels/{channel}/typing"
	RouteCallback    = "POST /interactions/{interaction}/{token}/callback"
	RouteFollowup    = "POST /webhooks/{application}/{token}"
	RouteWebhookEdit = "PATCH /webhooks/{application}/{token}/messages/{message}"
	routeNotFound    = ""
)

const (
	maxBody            = 8 << 20
	messageContentBit  = 1 << 15 // the privileged MESSAGE_CONTENT intent
	webhookLifetime    = 15 * time.Minute
	discordEpochMillis = 1420070400000 // 2015-01-01, where snowflakes count from
)

// New starts a fake Discord; close it when done.
func New(opts Options) *Server {
	opts.defaults()
	s := &Server{
		Options:      opts,
		guilds:       map[string]*Guild{},
		channels:     map[string]*channelState{},
		users:        map[string]User{},
		faults:       map[string][]Fault{},
		nonces:       map[nonceKey]nonceEntry{},
		interactions: map[string]*interactionState{},
	}
	s.users[s.BotID] = User{ID: s.BotID, Name: s.BotName, Bot: true}
	api := http.NewServeMux()
	routes := map[string]func(*request) (int, any){
		RouteGateway: s.gatewayURL, RouteGatewayBot: s.gatewayBot, RouteMe: s.me,
		RouteChannel: s.channel, RouteGuild: s.guild,
		RouteSend: s.send, RouteHistory: s.history, RouteGetMessage: s.getMessage, RouteEdit: s.edit,
		RouteReact: s.react, RouteUnreact: s.unreact, RouteTyping: s.startTyping,
		RouteCallback: s.callback, RouteFollowup: s.followup, RouteWebhookEdit: s.webhookEdit,
		"/": func(*request) (int, any) { return apiError(http.StatusNotFound, 0, "404: Not Found") },
	}
	for pattern, h := range routes {
		api.Handle(pattern, s.handler(pattern, h))
	}
	api.Handle(RouteActiveThreads, s.handler(RouteActiveThreads, s.activeThreads)) // threads.go
	mux := http.NewServeMux()
	mux.Handle("/api/", stripVersion(api))
	mux.HandleFunc("/gateway", s.serveGateway)
	mux.HandleFunc("/attachments/", s.serveCDN) // cdn.go
	mux.HandleFunc("/gateway/", s.serveGateway)
	s.http = httptest.NewServer(mux)
	return s
}

// URL is the fake's base address.
func (s *Server) URL() string { return s.http.URL }

// APIURL is the REST API's base, shaped as discordgo.EndpointAPI.
func (s *Server) APIURL() string { return s.http.URL + "/api/v9/" }

// GatewayURL is the WebSocket address GET /gateway answers.
func (s *Server) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + "/gateway"
}

// Client is an HTTP client that sends every request to the fake, whatever
// host it names (discord.com for discordgo): set it as session.Client.
func (s *Server) Client() *http.Client {
	base := s.http.Client()
	target, _ := url.Parse(s.http.URL)
	return &http.Client{Timeout: 20 * time.Second, Transport: redirect{to: target, next: base.Transport}}
}

type redirect struct {
	to   *url.URL
	next http.RoundTripper
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.to.Scheme, r.to.Host, ""
	return r.next.RoundTrip(out)
}

// Close stops the server and its gateway connections.
func (s *Server) Close() {
	s.closeGateway()
	s.http.CloseClientConnections()
	s.http.Close()
}

// WaitFor returns once cond holds, checking it after every change the
// fake sees, or ctx's error when ctx ends first.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	return s.feed.WaitFor(ctx, "discordtest", cond)
}

// touch wakes WaitFor.
func (s *Server) touch() { s.feed.Touch() }

// Calls are the calls received, of the given routes or of all.
func (s *Server) Calls(routes ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(routes) == 0 || contains(routes, c.Route) {
			out = append(out, c)
		}
	}
	return out
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
