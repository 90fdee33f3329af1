package webchat

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/hostcheck"
	"github.com/replyflow/replyflow/pipeline"
)

// Channel is the channel name of web chat sessions.
const Channel = "webchat"

const maxBodyBytes = pipeline.MaxTextBytes + 4<<10

//go:embed page.html
var page embed.FS

// ServerConfig configures the web chat platform.
type ServerConfig struct {
	// Sink receives every user message; it must return only once the
	// message is durably accepted.
	Sink adapters.Sink
	// BotToken authorizes the bot API. It must not be empty.
	BotToken string
	Logger   *slog.Logger
	// Now is the clock used to stamp inbound messages; nil means time.Now.
	Now func() time.Time
	// TrustedOrigins are the browser origins ("https://chat.example")
	// besides the gateway's own that may send it state-changing requests
	// (a front end served elsewhere); REPLYFLOW_WEBCHAT_ORIGINS.
	TrustedOrigins []string
	// StreamWriteTimeout bounds each write to an event stream, so a client
	// that stops reading is cut off; 15s when zero. Streams lift the HTTP
	// server's own read and write timeouts, which would end them.
	StreamWriteTimeout time.Duration
	// Auth says how the user API learns who speaks; the zero value is
	// AuthToken, which needs AuthKey (REPLYFLOW_WEBCHAT_AUTH_KEY).
	Auth    AuthMode
	AuthKey string
	// ChatLog keeps what each chat shows, for a page that reloads (GET
	// /api/chats/{chat}/history) and for the idempotency of bot sends: the
	// store's, so that it outlives this gateway and is shared with any
	// other. Nil keeps it in this process's memory (memoryLog).
	ChatLog adapters.ChatLog
	// Uploads keeps the files users upload (POST
	// /api/chats/{chat}/uploads), each at most MaxUploadBytes, in the
	// store's media space; nil refuses uploads (REPLYFLOW_MEDIA is off).
	Uploads        adapters.UploadStore
	MaxUploadBytes int64
}

// Server is the web chat platform: the user API, the event stream, the page
// and the bot API.
type Server struct {
	cfg ServerConfig
	hub *hub
	log adapters.ChatLog
	mux *http.ServeMux
	// crossOrigin refuses a state-changing request a browser sends from
	// another site's page (Sec-Fetch-Site, else Origin against Host).
	crossOrigin *http.CrossOriginProtection
	// signer verifies sign-ins (nil in AuthNone mode); usedLinks makes
	// each login link work once.
	signer    *Signer
	usedLinks *usedLinks
	// instance names this gateway's web chat (GET /bot/instance; see
	// single.go).
	instance string
	// streams and uploads bound each signed-in sender's open event
	// streams and uploads in flight.
	streams, uploads *senderSlots
}

// NewServer builds the platform. It refuses an empty bot token, because the
// bot API would otherwise let anyone post as the bot.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Sink == nil {
		return nil, errors.New("webchat: a Sink is required")
	}
	if cfg.BotToken == "" {
		return nil, errors.New("webchat: the bot token is empty; set REPLYFLOW_WEBCHAT_BOT_TOKEN to the same secret on the gateway and the worker")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ChatLog == nil {
		cfg.ChatLog = newMemoryLog()
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = 15 * time.Second
	}
	mode, err := ParseAuthMode(string(cfg.Auth))
	if err != nil {
		return nil, fmt.Errorf("webchat: %w", err)
	}
	cfg.Auth = mode
	s := &Server{cfg: cfg, hub: newHub(randomID("")[:8]), log: cfg.ChatLog, mux: http.NewServeMux(),
		crossOrigin: http.NewCrossOriginProtection(), usedLinks: newUsedLinks(maxUsedLinks), instance: randomID("gw-"), streams: newSenderSlots(MaxStreamsPerSender),
		uploads: newSenderSlots(MaxUploadsPerSender)}
	if mode == AuthToken {
		if s.signer, err = NewSigner(cfg.AuthKey); err != nil {
			return nil, fmt.Errorf("webchat: signing users in (REPLYFLOW_WEBCHAT_AUTH=token): %w; or, on a loopback address only, set REPLYFLOW_WEBCHAT_AUTH=none", err)
		}
	}
	for _, origin := range cfg.TrustedOrigins {
		if err := s.crossOrigin.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("webchat: REPLYFLOW_WEBCHAT_ORIGINS: %w", err)
		}
	}
	s.mux.HandleFunc("POST /api/chats/{chat}/messages", s.postUserMessage)
	s.mux.HandleFunc("POST /api/chats/{chat}/uploads", s.postUpload)
	s.mux.HandleFunc("GET /api/chats/{chat}/events", s.streamEvents)
	s.mux.HandleFunc("GET /api/chats/{chat}/history", s.getHistory)
	s.mux.HandleFunc("POST /bot/chats/{chat}/messages", s.bot(s.postBotMessage))
	s.mux.HandleFunc("POST /bot/chats/{chat}/files", s.botSized(maxFileBodyBytes, s.postBotFile))
	s.mux.HandleFunc("PUT /bot/chats/{chat}/messages/{message}/reaction", s.bot(s.putReaction))
	s.mux.HandleFunc("PATCH /bot/chats/{chat}/messages/{message}", s.bot(s.patchBotMessage))
	s.mux.HandleFunc("POST /api/chats/{chat}/actions", s.postAction)
	s.mux.HandleFunc("POST /bot/chats/{chat}/typing", s.bot(s.postTyping))
	s.mux.HandleFunc("GET /bot/instance", s.getInstance)
	s.mux.HandleFunc("GET /api/me", s.getMe)
	s.mux.HandleFunc("GET /login", s.login)
	s.mux.HandleFunc("POST /logout", s.logout)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /{$}", servePage)
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return s, nil
}

// ServeHTTP makes the Server an http.Handler. Before any route, a
// state-changing request must come from the gateway's own page (or a
// trusted origin) and carry JSON: a page elsewhere could otherwise post a
// text/plain "simple request" (no CORS preflight) in a visitor's browser.
// In none mode the request must also name the gateway by a loopback name:
// a page whose own name resolves to 127.0.0.1 (DNS rebinding) is
// same-origin to itself, so the origin checks cannot tell it apart.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Auth == AuthNone && !hostcheck.Loopback(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf(
			"this gateway signs no one in (REPLYFLOW_WEBCHAT_AUTH=none), so it answers only requests addressed to %s, not to %q: open it by one of those names, or set REPLYFLOW_WEBCHAT_AUTH=token",
			hostcheck.Names, r.Host))
		return
	}
	if s.corsHeaders(w, r) {
		return
	}
	if err := s.crossOrigin.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "a request from another site's page is refused ("+err.Error()+"); a front end served elsewhere needs its origin in REPLYFLOW_WEBCHAT_ORIGINS")
		return
	}
	if changesState(r.Method) && !isJSON(r.Header.Get("Content-Type")) && !isUpload(r) {
		writeError(w, http.StatusUnsupportedMediaType, "send the body as Content-Type: application/json")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func isJSON(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && media == "application/json"
}

// UserMessage is the body of POST /api/chats/{chat}/messages.
type UserMessage struct {
	MessageID  string `json:"message_id,omitempty"`
	SenderID   string `json:"sender_id"`
	SenderName string `json:"sender_name,omitempty"`
	Text       string `json:"text"`
	ThreadID   string `json:"thread_id,omitempty"`
	ReplyTo    string `json:"reply_to,omitempty"`
	// A custom platform says what it knows, for engagement: a group chat,
	// a bot sender, a mention of the bot or of others.
	ChatType       string `json:"chat_type,omitempty"`
	SenderIsBot    bool   `json:"sender_is_bot,omitempty"`
	MentionsBot    bool   `json:"mentions_bot,omitempty"`
	MentionsOthers bool   `json:"mentions_others,omitempty"`
}

// DecodeUserMessage parses and normalizes a user message for chat, its
// sender the body's (none mode). It is the whole of the inbound rules, so
// it is fuzzed on its own.
func DecodeUserMessage(chat string, body io.Reader, now time.Time) (pipeline.Inbound, error) {
	m, err := decodeUserMessage(body)
	if err != nil {
		return pipeline.Inbound{}, err
	}
	return m.inbound(chat, now)
}

func decodeUserMessage(body io.Reader) (UserMessage, error) {
	var m UserMessage
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("body is not a valid message: %w", err)
	}
	if dec.More() {
		return m, errors.New("body has data after the JSON object")
	}
	return m, nil
}

// inbound is the message for chat, with the files uploaded with it,
// checked.
func (m UserMessage) inbound(chat string, now time.Time, media ...pipeline.Media) (pipeline.Inbound, error) {
	if m.SenderID == "" {
		return pipeline.Inbound{}, errors.New("sender_id is missing")
	}
	if m.Text == "" && len(media) == 0 {
		return pipeline.Inbound{}, errors.New("text is missing")
	}
	if m.MessageID == "" {
		m.MessageID = randomID("u-")
	}
	chatType := pipeline.ChatDirect
	switch m.ChatType {
	case "", string(pipeline.ChatDirect):
	case string(pipeline.ChatGroup):
		chatType = pipeline.ChatGroup
	default:
		return pipeline.Inbound{}, fmt.Errorf("chat_type must be direct or group, got %q", m.ChatType)
	}
	in := pipeline.Inbound{
		Channel: Channel, ChatID: chat, ChatType: chatType,
		MessageID: m.MessageID, SenderID: m.SenderID, SenderName: m.SenderName,
		Text: m.Text, ThreadID: m.ThreadID, ReplyTo: m.ReplyTo, ReceivedAt: now.UTC(),
		SenderIsBot: m.SenderIsBot, MentionsBot: m.MentionsBot, MentionsOthers: m.MentionsOthers,
		Media: media,
	}
	return in, in.Validate()
}

func (s *Server) postUserMessage(w http.ResponseWriter, r *http.Request) {
	chat := r.PathValue("chat")
	who, ok := s.caller(w, r, chat)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	m, err := decodeUserMessage(r.Body)
	if err != nil {
		writeError(w, bodyStatus(err), err.Error())
		return
	}
	if !speaksAs(w, who, &m.SenderID, &m.SenderName) {
		return
	}
	in, err := m.inbound(chat, s.cfg.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	in.SenderIsOwner = who != nil && who.Owner
	s.accept(w, r, in, nil)
}

// accept hands a user message to the Sink, records it in the chat's log
// with the files uploaded with it, and answers 202 (or why not).
func (s *Server) accept(w http.ResponseWriter, r *http.Request, in pipeline.Inbound, files []UploadEvent) {
	if err := s.cfg.Sink.Accept(r.Context(), in); err != nil {
		if writeRateLimited(w, err) {
			return
		}
		// The cause (the workflow ID, Temporal's address and error text)
		// is the operator's: the client is told only what to do.
		s.cfg.Logger.Warn("Web chat message not accepted; the client may retry with the same message_id",
			"session", in.Session().WorkflowID(), "message_id", in.MessageID, "error", err)
		writeError(w, http.StatusServiceUnavailable, notAccepted("message", "message_id"))
		return
	}
	// A retried message (same message_id) is shown once. The message is
	// accepted whatever the log says: a log that fails costs the history
	// this message, not the answer.
	user := UserEvent{
		MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName,
		Text: in.Text, ThreadID: in.ThreadID, ReplyTo: in.ReplyTo, Files: files,
	}
	_, fresh, err := s.record(r.Context(), in.ChatID, "user:"+in.MessageID, "user", in.MessageID, user)
	if err != nil {
		s.cfg.Logger.Warn("Web chat message accepted, but not recorded in the chat's history: a reloaded page will not show it (is the store reachable? REPLYFLOW_STORE_DSN)",
			"session", in.Session().WorkflowID(), "message_id", in.MessageID, "error", err)
		fresh = true
	}
	if fresh {
		s.hub.publish(in.ChatID, "user", user)
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"message_id": in.MessageID})
}

func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	chat := r.PathValue("chat")
	who, ok := s.caller(w, r, chat)
	if !ok {
		return
	}
	if err := pipeline.ValidateID("chat", chat); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if who != nil && !who.AllChats {
		if !s.streams.take(who.Sub) {
			// A browser's EventSource gives up on a 429 (it does not
			// reconnect); a script is told why, and when to try again.
			w.Header().Set("Retry-After", "10")
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
				"this sender already holds %d event streams, the most one sender may hold open; close one (a tab) and connect again", MaxStreamsPerSender))
			return
		}
		defer s.streams.release(who.Sub)
	}
	// A stream ends when its sign-in expires; the browser's reconnection
	// then meets the 401.
	var signInExpired <-chan time.Time
	if who != nil && who.ExpiresAt != 0 {
		timer := time.NewTimer(time.Unix(who.ExpiresAt, 0).Sub(s.cfg.Now()))
		defer timer.Stop()
		signInExpired = timer.C
	}
	rc := http.NewResponseController(w)
	// The stream outlives the server's request timeouts: no read deadline
	// (a GET has no body to wait for), and a deadline per write instead.
	// A server without deadlines (a test recorder) has none to lift.
	_ = rc.SetReadDeadline(time.Time{})
	send := func(events []Event, comment string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
		_, _ = io.WriteString(w, comment)
		for _, ev := range events {
			writeEvent(w, ev)
		}
		return rc.Flush() == nil
	}
	// ?replay=all asks for the whole backlog on a first connection (a page
	// that was reloaded); a reconnection's Last-Event-ID still wins.
	missed, sub := s.hub.subscribe(chat, r.Header.Get("Last-Event-ID"), r.URL.Query().Get("replay") == "all")
	defer s.hub.unsubscribe(chat, sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !send(missed, "retry: 1000\n\n") {
		return
	}
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		var sent bool
		select {
		case <-r.Context().Done():
			return
		case <-signInExpired:
			return
		case ev, open := <-sub:
			if !open {
				return
			}
			sent = send([]Event{ev}, "")
		case <-keepAlive.C:
			sent = send(nil, ": keep-alive\n\n")
		}
		if !sent {
			return
		}
	}
}

func writeEvent(w io.Writer, ev Event) {
	_, _ = fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, ev.Data)
}

// UserAction is the body of POST /api/chats/{chat}/actions: a button press.
type UserAction struct {
	ActionID   string `json:"action_id,omitempty"`
	SenderID   string `json:"sender_id"`
	SenderName string `json:"sender_name,omitempty"`
	MessageID  string `json:"message_id"`
	Action     string `json:"action"`
}

func (s *Server) postAction(w http.ResponseWriter, r *http.Request) {
	who, ok := s.caller(w, r, r.PathValue("chat"))
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	var a UserAction
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeError(w, bodyStatus(err), "body is not a valid action: "+err.Error())
		return
	}
	if a.Action == "" || a.MessageID == "" {
		writeError(w, http.StatusBadRequest, "action and message_id are required")
		return
	}
	if !speaksAs(w, who, &a.SenderID, &a.SenderName) {
		return
	}
	if a.ActionID == "" {
		a.ActionID = randomID("a-")
	}
	in := pipeline.Inbound{
		Channel: Channel, ChatID: r.PathValue("chat"), ChatType: pipeline.ChatDirect, MessageID: a.ActionID,
		SenderID: a.SenderID, SenderName: a.SenderName, ReplyTo: a.MessageID, Action: a.Action, ReceivedAt: s.cfg.Now().UTC(),
		SenderIsOwner: who != nil && who.Owner,
	}
	if err := in.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.cfg.Sink.Accept(r.Context(), in); err != nil {
		if writeRateLimited(w, err) {
			return
		}
		s.cfg.Logger.Warn("Web chat button press not accepted; the client may retry with the same action_id",
			"session", in.Session().WorkflowID(), "action_id", in.MessageID, "message_id", in.ReplyTo, "error", err)
		writeError(w, http.StatusServiceUnavailable, notAccepted("button press", "action_id"))
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"action_id": in.MessageID})
}

// pagePolicy is the page's Content-Security-Policy: its one inline
// script (by its hash) is the only script that runs, so an inline handler
// or script that got into a message by any way is refused by the browser
// too, after the sanitizer (markdown.go); and no other site may frame the
// page to trick a click on its buttons.
var pagePolicy = func() string {
	html, err := page.ReadFile("page.html")
	if err != nil {
		panic(err)
	}
	_, rest, ok1 := bytes.Cut(html, []byte("<script>"))
	script, _, ok2 := bytes.Cut(rest, []byte("</script>"))
	if !ok1 || !ok2 {
		panic("webchat: page.html has no <script> element")
	}
	sum := sha256.Sum256(script)
	return "default-src 'self'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; style-src 'unsafe-inline'; " +
		"img-src 'self' blob:; media-src blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
}()

func servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pagePolicy)
	http.ServeFileFS(w, r, page, "page.html")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeRateLimited answers 429 with Retry-After (whole seconds) when the
// gateway's rate limits dropped the message (it is not queued: the
// client sends it again after that long, if at all), and reports
// whether it did.
func writeRateLimited(w http.ResponseWriter, err error) bool {
	limited, ok := adapters.AsRateLimited(err)
	if !ok {
		return false
	}
	seconds := max(1, int(math.Ceil(limited.RetryAfter.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
		"too many messages (the gateway's %s limit): this one was dropped, not queued; send it again in %d s", limited.Limit, seconds))
	return true
}

// notAccepted is the reason of a 503 for what Temporal did not take:
// fixed, and saying what to do; the cause goes to the gateway's log.
func notAccepted(what, id string) string {
	return fmt.Sprintf("the %s was not accepted (the gateway could not hand it on; its log says why): retry with the same %s, which is processed once", what, id)
}

// bodyStatus is the status of a body that could not be read as what it
// should be: 413 when it was over its limit (a client must not retry it
// as it is), 400 otherwise.
func bodyStatus(err error) int {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func writeError(w http.ResponseWriter, status int, reason string) {
	writeJSON(w, status, map[string]string{"error": reason})
}

func randomID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// CloseStreams ends every open event stream; call it before shutting the
// HTTP server down.
func (s *Server) CloseStreams() { s.hub.closeAll() }
