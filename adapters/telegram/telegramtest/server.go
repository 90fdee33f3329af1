package telegramtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters/internal/changes"
)

// Server is a fake Bot API on 127.0.0.1. Point the adapter's APIURL at
// URL(). It keeps chats, messages, reactions and pending updates in
// memory, and records every call.
type Server struct {
	Token string
	Bot   User

	http *httptest.Server
	now  func() time.Time

	mu         sync.Mutex
	feed       changes.Feed // wakes WaitFor (and long polls) on every change
	chats      map[int64]*chatState
	updates    []wireUpdate // not yet confirmed, in update_id order
	nextUpdate int64
	allowed    map[string]bool // the last allowed_updates asked for
	webhook    string
	hook       webhookState
	calls      []Call
	faults     map[string][]Fault
	limits     *limiter // nil: no flood limits (EnforceLimits)
	limited    int      // calls answered 429 by limits
	callbacks  map[string]*callbackState
	nextQuery  int
	waiting    int               // long polls waiting for an update
	files      map[string][]byte // file ID → bytes served by getFile (AddFile)
	downloads  int               // files downloaded from the file route
	holdFiles  <-chan struct{}   // downloads wait for it to close (HoldDownloads)
}

// Call is one request the fake received, with its fields decoded.
type Call struct {
	Method string
	Params map[string]string
	// Status is the HTTP status answered; Description the error's.
	Status      int
	Description string
	// At is when the call was answered.
	At time.Time
}

// Fault is an error the fake answers instead of doing a method.
type Fault struct {
	Status      int
	Description string
	RetryAfter  int
	// Applied does the call first and then answers the fault, as when
	// Telegram's answer is lost on its way back.
	Applied bool
	// When, if set, picks the calls the fault is for (by their fields);
	// other calls of the method are served, and the fault waits for its
	// call. Tests use it to fail one step of a sequence, such as a clear.
	When func(params map[string]string) bool
}

// ClearsReaction picks setMessageReaction calls that remove the reaction.
func ClearsReaction(params map[string]string) bool {
	raw := strings.TrimSpace(params["reaction"])
	return raw == "" || raw == "[]"
}

// TooManyRequests is Telegram's flood-control answer.
func TooManyRequests(retryAfter int) Fault {
	return Fault{Status: http.StatusTooManyRequests, Description: fmt.Sprintf("Too Many Requests: retry after %d", retryAfter), RetryAfter: retryAfter}
}

// ServerError is a Telegram-side failure.
func ServerError() Fault {
	return Fault{Status: http.StatusBadGateway, Description: "Bad Gateway"}
}

// User is a Telegram account, a person's or the bot's.
type User struct {
	ID        int64
	Username  string
	FirstName string
	IsBot     bool
}

func (u User) wire() wireUser {
	return wireUser{ID: u.ID, IsBot: u.IsBot, FirstName: u.FirstName, Username: u.Username}
}

// New starts a fake Bot API for token (a "123456:secret" token; the bot's
// ID is the part before the colon). Close it when done.
func New(token string) *Server { return NewOn(token, nil) }

// NewOn is New serving on ln (a free port when nil): a test can point a
// gateway at an address before the fake comes up there, as a Bot API that
// was unreachable and comes back.
func NewOn(token string, ln net.Listener) *Server {
	id, _ := strconv.ParseInt(strings.SplitN(token, ":", 2)[0], 10, 64)
	s := &Server{
		Token:     token,
		Bot:       User{ID: id, Username: "replyflow_test_bot", FirstName: "replyflow", IsBot: true},
		now:       time.Now,
		chats:     map[int64]*chatState{},
		allowed:   defaultAllowed(),
		faults:    map[string][]Fault{},
		callbacks: map[string]*callbackState{},
	}
	s.http = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if ln != nil {
		s.http.Listener.Close()
		s.http.Listener = ln
	}
	s.http.Start()
	return s
}

// URL is the API's base address, for the adapter's APIURL.
func (s *Server) URL() string { return s.http.URL }

// Close stops the server; long polls in progress return.
func (s *Server) Close() {
	s.mu.Lock()
	s.stopWebhookLocked()
	s.mu.Unlock()
	s.http.CloseClientConnections()
	s.http.Close()
}

// FailNext makes the next n calls of method answer fault.
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
	return s.feed.WaitFor(ctx, "telegramtest", cond)
}

// touch wakes WaitFor (and long polls).
func (s *Server) touch() { s.feed.Touch() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, r, rest)
		return
	}
	token, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	if !ok || !strings.HasPrefix(r.URL.Path, "/bot") {
		writeJSON(w, http.StatusNotFound, wireResponse{ErrorCode: http.StatusNotFound, Description: "Not Found"})
		return
	}
	if token != s.Token {
		writeJSON(w, http.StatusUnauthorized, wireResponse{ErrorCode: http.StatusUnauthorized, Description: "Unauthorized"})
		return
	}
	params, err := decodeParams(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, wireResponse{ErrorCode: http.StatusBadRequest, Description: "Bad Request: " + err.Error()})
		return
	}
	status, resp := s.call(r.Context(), method, params)
	writeJSON(w, status, resp)
}

// call runs one method, or the fault queued for it, and records it.
func (s *Server) call(ctx context.Context, method string, params map[string]string) (int, wireResponse) {
	s.mu.Lock()
	fault, faulty := s.takeFault(method, params)
	flood := 0
	if !faulty {
		flood = s.overLimit(method, params)
	}
	s.mu.Unlock()
	var status int
	var resp wireResponse
	if flood > 0 {
		status, resp = floodAnswer(flood)
	} else if !faulty || fault.Applied {
		status, resp = s.dispatch(ctx, method, params)
	}
	if faulty {
		status, resp = fault.Status, wireResponse{ErrorCode: fault.Status, Description: fault.Description}
		if fault.RetryAfter > 0 {
			resp.Parameters = &wireParameters{RetryAfter: fault.RetryAfter}
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params, Status: status, Description: resp.Description, At: s.now()})
	s.touch()
	s.mu.Unlock()
	return status, resp
}

func (s *Server) takeFault(method string, params map[string]string) (Fault, bool) {
	queue := s.faults[method]
	if len(queue) == 0 || (queue[0].When != nil && !queue[0].When(params)) {
		return Fault{}, false
	}
	s.faults[method] = queue[1:]
	return queue[0], true
}

// decodeParams reads a request's fields as the Bot API takes them: a
// multipart or URL-encoded form (what the SDK sends; structured fields are
// JSON text), a JSON object, or the query string.
func decodeParams(r *http.Request) (map[string]string, error) {
	params := map[string]string{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mediaType {
	case "multipart/form-data":
		err := r.ParseMultipartForm(8 << 20)
		if errors.Is(err, io.EOF) {
			break // an empty body, as the SDK sends for a method without fields
		}
		if err != nil {
			return nil, fmt.Errorf("can't parse the multipart form: %v", err)
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		for k, files := range r.MultipartForm.File {
			// An uploaded file: its bytes, and its name beside them.
			f, err := files[0].Open()
			if err != nil {
				return nil, err
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return nil, err
			}
			params[k], params[k+uploadNameSuffix] = string(data), files[0].Filename
		}
	case "application/x-www-form-urlencoded":
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			return nil, err
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("can't parse the form: %v", err)
		}
		for k, v := range form {
			params[k] = v[0]
		}
	case "application/json":
		var fields map[string]json.RawMessage
		if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&fields); err != nil {
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
	}
	return params, nil
}

func writeJSON(w http.ResponseWriter, status int, resp wireResponse) {
	resp.OK = status == http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func badRequest(format string, args ...any) (int, wireResponse) {
	return http.StatusBadRequest, wireResponse{ErrorCode: http.StatusBadRequest, Description: "Bad Request: " + fmt.Sprintf(format, args...)}
}

func ok(result any) (int, wireResponse) {
	return http.StatusOK, wireResponse{Result: result}
}
