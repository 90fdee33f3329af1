// Package slacktest is a fake Slack for tests: the Web API methods the
// adapter uses, as slack-go sends them; a Socket Mode WebSocket with
// envelopes, acks and redeliveries; Events API and interactivity requests
// signed as Slack signs them; injectable faults; and a record of every
// call. slack-go's own slacktest lacks reactions.remove and the assistant
// status, hence this one.
package slacktest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters/internal/changes"
)

// Options configure a fake; zero fields take the defaults New names.
type Options struct {
	BotToken      string // "xoxb-test"
	AppToken      string // "xapp-test", for apps.connections.open
	SigningSecret string // "test-signing-secret"
	TeamID        string // "T0TEST"
	AppID         string // "A0TEST"
	BotUserID     string // "U0BOT"
	BotID         string // "B0BOT"
	// AckTimeout is how long an envelope waits for its ack before it is
	// sent again (Slack waits a few seconds; tests want less). 2s.
	AckTimeout time.Duration
	// MaxRetries is how often an unacked envelope is redelivered; 3, as
	// Slack does.
	MaxRetries int
	// PingInterval is how often the fake pings each socket; 1s.
	PingInterval time.Duration
}

func (o *Options) defaults() {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&o.BotToken, "xoxb-test")
	def(&o.AppToken, "xapp-test")
	def(&o.SigningSecret, "test-signing-secret")
	def(&o.TeamID, "T0TEST")
	def(&o.AppID, "A0TEST")
	def(&o.BotUserID, "U0BOT")
	def(&o.BotID, "B0BOT")
	if o.AckTimeout <= 0 {
		o.AckTimeout = 2 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 3
	}
	if o.PingInterval <= 0 {
		o.PingInterval = time.Second
	}
}

// Server is a fake Slack on 127.0.0.1. Point slack-go at it with
// slack.OptionAPIURL(s.APIURL()). It keeps channels, messages, reactions
// and envelopes in memory, and records every call. Nothing is bounded or
// expires: a fake lives for one test, which makes a few hundred calls at
// most; request bodies are read up to 8 MiB.
type Server struct {
	Options

	http *httptest.Server

	mu       sync.Mutex
	feed     changes.Feed // wakes WaitFor on every change
	channels map[string]*channelState
	lastTS   int64 // the newest message timestamp, in microseconds
	calls    []Call
	faults   map[string][]Fault
	limits   *limiter // nil: no rate limits (EnforceLimits)
	limited  int      // calls answered 429 by limits
	statuses []Status
	ephemera []Ephemeral
	uploads  map[string]*upload // files.getUploadURLExternal's, by file ID
	fetched  int                // files served from url_private (files.go)
	nextID   int                // for event and envelope IDs
	socket   socketState
	stop     chan struct{}
	stopOnce sync.Once
}

// Call is one Web API request the fake received, its fields decoded (the
// token left out).
type Call struct {
	Method string
	Params map[string]string
	// Status is the HTTP status answered (0: none, the connection was
	// closed); Error Slack's error code when the answer was ok:false.
	Status int
	Error  string
	At     time.Time
}

// Fault is what the fake answers instead of doing a method.
type Fault struct {
	// Status is the HTTP status: 429 and 5xx as Slack's edge answers
	// them, or 200 (or 0) with Error as an ok:false answer.
	Status     int
	Error      string
	RetryAfter int // seconds, for 429's Retry-After
	// Applied does the method before answering: Slack did the call and
	// its answer was lost on the way (see AnswerLost, HungUp).
	Applied bool
	// Hangup closes the connection without an answer instead; the call
	// is recorded with Status 0.
	Hangup bool
	// When, if set, picks the calls the fault is for (by their fields);
	// other calls of the method are served, and the fault waits for its
	// call.
	When func(params map[string]string) bool
}

// RateLimited is Slack's 429 with Retry-After.
func RateLimited(retryAfter int) Fault {
	return Fault{Status: http.StatusTooManyRequests, Error: "ratelimited", RetryAfter: retryAfter}
}

// ServerError is a failure of Slack's side.
func ServerError() Fault { return Fault{Status: http.StatusServiceUnavailable} }

// SlackError is an ok:false answer with Slack's error code.
func SlackError(code string) Fault { return Fault{Status: http.StatusOK, Error: code} }

// InChannel picks calls for the channel (either field name Slack uses).
func InChannel(id string) func(map[string]string) bool {
	return func(p map[string]string) bool { return p["channel"] == id || p["channel_id"] == id }
}

// New starts a fake Slack; close it when done.
func New(opts Options) *Server {
	opts.defaults()
	s := &Server{
		Options:  opts,
		channels: map[string]*channelState{},
		faults:   map[string][]Fault{},
		stop:     make(chan struct{}),
	}
	s.socket.init()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("POST /upload/{file}", s.serveUpload)
	mux.HandleFunc("GET /files-pri/", s.serveFile) // files.go
	mux.HandleFunc("/socket", s.serveSocket)
	s.http = httptest.NewServer(mux)
	go s.redeliverLoop()
	return s
}

// URL is the fake's base address.
func (s *Server) URL() string { return s.http.URL }

// APIURL is the Web API's address, for slack.OptionAPIURL.
func (s *Server) APIURL() string { return s.http.URL + "/api/" }

// Close stops the server and its sockets.
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.closeSockets()
	s.http.CloseClientConnections()
	s.http.Close()
}

// FailNext makes the next n calls of method (those fault.When picks)
// answer fault.
func (s *Server) FailNext(method string, n int, fault Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault)
	}
}

// Calls are the calls received, of the given methods or of all.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// WaitFor returns once cond holds, checking it after every change the
// fake sees, or ctx's error when ctx ends first.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	return s.feed.WaitFor(ctx, "slacktest", cond)
}

// touch wakes WaitFor (and long polls).
func (s *Server) touch() { s.feed.Touch() }

// answer is a Web API reply: ok, or error and the method's fields.
type answer map[string]any

func slackErr(code string) answer { return answer{"ok": false, "error": code} }

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, err := decodeParams(r)
	if err != nil {
		writeAnswer(w, http.StatusOK, answer{"ok": false, "error": "invalid_form_data", "detail": err.Error()})
		return
	}
	token := params["token"]
	delete(params, "token")
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = bearer
	}
	status, resp := s.call(method, token, params)
	if status == 0 {
		hangUp(w)
		return
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter(resp)))
	}
	writeAnswer(w, status, resp)
}

// call checks the token, runs the method or the fault queued for it, and
// records the call.
func (s *Server) call(method, token string, params map[string]string) (int, answer) {
	status, resp := http.StatusOK, answer(nil)
	wantToken := s.BotToken
	if method == "apps.connections.open" {
		wantToken = s.AppToken
	}
	s.mu.Lock()
	switch {
	case token == "":
		resp = slackErr("not_authed")
	case method == "apps.connections.open" && strings.HasPrefix(token, "xoxb-"):
		resp = slackErr("not_allowed_token_type")
	case token != wantToken:
		resp = slackErr("invalid_auth")
	default:
		if fault, ok := s.takeFault(method, params); ok {
			if fault.Applied {
				s.dispatch(method, params)
			}
			status, resp = cmp.Or(fault.Status, http.StatusOK), slackErr(fault.Error)
			if fault.RetryAfter > 0 {
				resp["retry_after"] = fault.RetryAfter
			}
			if fault.Hangup {
				status, resp = 0, answer{}
			}
		} else if secs := s.overLimit(method, params); secs > 0 {
			status, resp = ratelimited(secs)
		} else {
			resp = s.dispatch(method, params)
		}
	}
	errCode, _ := resp["error"].(string)
	s.calls = append(s.calls, Call{Method: method, Params: params, Status: status, Error: errCode, At: time.Now()})
	s.touch()
	s.mu.Unlock()
	return status, resp
}

func (s *Server) retryAfter(resp answer) int {
	if n, ok := resp["retry_after"].(int); ok {
		delete(resp, "retry_after")
		return n
	}
	return 1
}

// takeFault pops the method's next fault if it is for this call; s.mu
// must be held.
func (s *Server) takeFault(method string, params map[string]string) (Fault, bool) {
	queue := s.faults[method]
	for i, f := range queue {
		if f.When == nil || f.When(params) {
			s.faults[method] = append(queue[:i:i], queue[i+1:]...)
			return f, true
		}
	}
	return Fault{}, false
}

// decodeParams reads a request's fields as slack-go sends them: a
// URL-encoded form (structured fields as JSON text), a JSON object, or
// the query string.
func decodeParams(r *http.Request) (map[string]string, error) {
	params := map[string]string{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mediaType == "application/json" && len(body) > 0:
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			return nil, fmt.Errorf("can't parse the JSON body: %v", err)
		}
		for k, raw := range fields {
			var text string
			if json.Unmarshal(raw, &text) == nil {
				params[k] = text
			} else {
				params[k] = string(raw)
			}
		}
	case mediaType == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("can't parse the form: %v", err)
		}
		for k, v := range form {
			params[k] = v[0]
		}
	}
	return params, nil
}

func writeAnswer(w http.ResponseWriter, status int, resp answer) {
	if status != http.StatusOK && status != http.StatusTooManyRequests {
		// Slack's edge answers 5xx with an HTML page, not JSON.
		http.Error(w, "<html>Service Unavailable</html>", status)
		return
	}
	if _, set := resp["ok"]; !set {
		resp["ok"] = true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
