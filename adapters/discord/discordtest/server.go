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
package discordtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
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
	feed         changes.Feed // wakes WaitFor on every change
	lastID       uint64       // the last snowflake handed out
	guilds       map[string]*Guild
	channels     map[string]*channelState
	users        map[string]User
	calls        []Call
	faults       map[string][]Fault
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
	Raw    []byte         // the body as sent
	Auth   string         // the Authorization header
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
	mux := http.NewServeMux()
	mux.Handle("/api/", stripVersion(api))
	mux.HandleFunc("/gateway", s.serveGateway)
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

// request is a call being served.
type request struct{ Call }

var versionPrefix = regexp.MustCompile(`^/api(/v\d+)?`)

// stripVersion serves /api/v{n}/… and /api/… as the same routes, as
// Discord does.
func stripVersion(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		prefix := versionPrefix.FindString(r.URL.Path)
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
		if r.URL.RawPath != "" {
			r2.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, versionPrefix.FindString(r.URL.RawPath))
		}
		h.ServeHTTP(w, r2)
	})
}

var pathVars = []string{"channel", "message", "emoji", "guild", "interaction", "token", "application"}

// handler decodes and records a call, checks its token, applies a fault
// queued for it, and runs h under s.mu.
func (s *Server) handler(pattern string, h func(*request) (int, any)) http.Handler {
	route := pattern
	if pattern == "/" {
		route = routeNotFound
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
		req := &request{Call: Call{Route: route, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
			Raw: raw, Auth: r.Header.Get("Authorization"), Vars: map[string]string{}}}
		for _, v := range pathVars {
			if val := r.PathValue(v); val != "" {
				req.Vars[v] = val
			}
		}
		var body map[string]any
		if len(raw) > 0 && json.Unmarshal(raw, &body) == nil {
			req.Body = body
		}
		s.mu.Lock()
		req.At = s.Now()
		status, resp, hangUp := s.serve(req, h)
		req.Status = status
		if m, ok := resp.(map[string]any); ok && status >= 400 {
			req.Code, _ = m["code"].(int)
		}
		s.calls = append(s.calls, req.Call)
		s.touch()
		s.mu.Unlock()
		if hangUp {
			hangUpOn(w)
			return
		}
		writeJSON(w, status, resp)
	})
}

// serve runs the call or its fault; s.mu must be held.
func (s *Server) serve(req *request, h func(*request) (int, any)) (status int, resp any, hangUp bool) {
	if needsBotToken(req.Route) && req.Auth != "Bot "+s.Token {
		status, resp = apiError(http.StatusUnauthorized, 0, "401: Unauthorized")
		return status, resp, false
	}
	fault, ok := s.takeFault(req.Call)
	if !ok {
		status, resp = h(req)
		return status, resp, false
	}
	if fault.Done {
		h(req)
	}
	if fault.HangUp {
		return 0, nil, true
	}
	status, resp = fault.answer()
	return status, resp, false
}

// needsBotToken: Discord authenticates interaction callbacks and
// webhooks by the token in their path, and /gateway needs none.
func needsBotToken(route string) bool {
	switch route {
	case RouteGateway, RouteCallback, RouteFollowup, RouteWebhookEdit, routeNotFound:
		return false
	}
	return true
}

func hangUpOn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, resp any) {
	if limited, ok := resp.(rateLimitAnswer); ok {
		for k, v := range limited.headers {
			w.Header().Set(k, v)
		}
		resp = limited.body
	} else if status < 400 {
		// Discord names each route's bucket on every answer; discordgo
		// reads these and would wait when Remaining reached 0.
		w.Header().Set("X-RateLimit-Limit", "5")
		w.Header().Set("X-RateLimit-Remaining", "4")
		w.Header().Set("X-RateLimit-Reset-After", "1.000")
	}
	if status == http.StatusNoContent || resp == nil {
		w.WriteHeader(cmpStatus(status, http.StatusNoContent))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func cmpStatus(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

// apiError is Discord's JSON error body.
func apiError(status, code int, message string) (int, any) {
	return status, map[string]any{"message": message, "code": code}
}

// formError is Discord's 50035 Invalid Form Body naming the field.
func formError(field, code, message string) (int, any) {
	return http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035,
		"errors": map[string]any{field: map[string]any{"_errors": []map[string]string{{"code": code, "message": message}}}}}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
