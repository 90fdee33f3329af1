package webchat

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
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
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters"
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
}

// Server is the web chat platform: the user API, the event stream, the page
// and the bot API.
type Server struct {
	cfg   ServerConfig
	hub   *hub
	sends *recentKeys
	mux   *http.ServeMux
	// crossOrigin refuses a state-changing request a browser sends from
	// another site's page (Sec-Fetch-Site, else Origin against Host).
	crossOrigin *http.CrossOriginProtection
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
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = 15 * time.Second
	}
	s := &Server{cfg: cfg, hub: newHub(randomID("")[:8]), sends: newRecentKeys(10000), mux: http.NewServeMux(), crossOrigin: http.NewCrossOriginProtection()}
	for _, origin := range cfg.TrustedOrigins {
		if err := s.crossOrigin.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("webchat: REPLYFLOW_WEBCHAT_ORIGINS: %w", err)
		}
	}
	s.mux.HandleFunc("POST /api/chats/{chat}/messages", s.postUserMessage)
	s.mux.HandleFunc("GET /api/chats/{chat}/events", s.streamEvents)
	s.mux.HandleFunc("POST /bot/chats/{chat}/messages", s.bot(s.postBotMessage))
	s.mux.HandleFunc("PUT /bot/chats/{chat}/messages/{message}/reaction", s.bot(s.putReaction))
	s.mux.HandleFunc("PATCH /bot/chats/{chat}/messages/{message}", s.bot(s.patchBotMessage))
	s.mux.HandleFunc("POST /api/chats/{chat}/actions", s.postAction)
	s.mux.HandleFunc("POST /bot/chats/{chat}/typing", s.bot(s.postTyping))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /{$}", servePage)
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return s, nil
}

// ServeHTTP makes the Server an http.Handler. Before any route, a
// state-changing request must come from the gateway's own page (or a
// trusted origin) and carry JSON: a page elsewhere could otherwise post a
// text/plain "simple request" (no CORS preflight) in a visitor's browser.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.crossOrigin.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "a request from another site's page is refused ("+err.Error()+"); a front end served elsewhere needs its origin in REPLYFLOW_WEBCHAT_ORIGINS")
		return
	}
	if changesState(r.Method) && !isJSON(r.Header.Get("Content-Type")) {
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

// DecodeUserMessage parses and normalizes a user message for chat. It is the
// whole of the inbound rules, so it is fuzzed on its own.
func DecodeUserMessage(chat string, body io.Reader, now time.Time) (pipeline.Inbound, error) {
	var m UserMessage
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return pipeline.Inbound{}, fmt.Errorf("body is not a valid message: %w", err)
	}
	if dec.More() {
		return pipeline.Inbound{}, errors.New("body has data after the JSON object")
	}
	if m.SenderID == "" {
		return pipeline.Inbound{}, errors.New("sender_id is missing")
	}
	if m.Text == "" {
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
	}
	return in, in.Validate()
}

func (s *Server) postUserMessage(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	in, err := DecodeUserMessage(r.PathValue("chat"), r.Body, s.cfg.Now())
	if err != nil {
		status := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, err.Error())
		return
	}
	if err := s.cfg.Sink.Accept(r.Context(), in); err != nil {
		if writeRateLimited(w, err) {
			return
		}
		s.cfg.Logger.Error("web chat message not accepted; the client may retry with the same message_id",
			"session", in.Session().WorkflowID(), "message_id", in.MessageID, "error", err)
		writeError(w, http.StatusServiceUnavailable, "the message was not accepted, retry with the same message_id: "+err.Error())
		return
	}
	// A retried message (same message_id) is shown once.
	if _, fresh := s.sends.claim("user\x00"+in.ChatID+"\x00"+in.MessageID, func() string { return in.MessageID }); fresh {
		s.hub.publish(in.ChatID, "user", UserEvent{
			MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName,
			Text: in.Text, ThreadID: in.ThreadID, ReplyTo: in.ReplyTo,
		})
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"message_id": in.MessageID})
}

func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	chat := r.PathValue("chat")
	if err := pipeline.ValidateID("chat", chat); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
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

// bot guards the bot API with the shared token.
func (s *Server) bot(next http.HandlerFunc) http.HandlerFunc {
	want := []byte("Bearer " + s.cfg.BotToken)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, "bot token missing or wrong: the worker and the gateway need the same REPLYFLOW_WEBCHAT_BOT_TOKEN")
			return
		}
		if err := pipeline.ValidateID("chat", r.PathValue("chat")); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		next(w, r)
	}
}

// BotMessage is the body of POST /bot/chats/{chat}/messages.
type BotMessage struct {
	IdempotencyKey string            `json:"idempotency_key"`
	Text           string            `json:"text"`
	ThreadID       string            `json:"thread_id,omitempty"`
	ReplyTo        string            `json:"reply_to,omitempty"`
	Buttons        []pipeline.Button `json:"buttons,omitempty"`
}

// BotEdit is the body of PATCH /bot/chats/{chat}/messages/{message}.
type BotEdit struct {
	Text    string            `json:"text"`
	Buttons []pipeline.Button `json:"buttons,omitempty"`
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
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	var a UserAction
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeError(w, http.StatusBadRequest, "body is not a valid action: "+err.Error())
		return
	}
	if a.Action == "" || a.MessageID == "" {
		writeError(w, http.StatusBadRequest, "action and message_id are required")
		return
	}
	if a.ActionID == "" {
		a.ActionID = randomID("a-")
	}
	in := pipeline.Inbound{
		Channel: Channel, ChatID: r.PathValue("chat"), ChatType: pipeline.ChatDirect, MessageID: a.ActionID,
		SenderID: a.SenderID, SenderName: a.SenderName, ReplyTo: a.MessageID, Action: a.Action, ReceivedAt: s.cfg.Now().UTC(),
	}
	if err := in.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.cfg.Sink.Accept(r.Context(), in); err != nil {
		if writeRateLimited(w, err) {
			return
		}
		writeError(w, http.StatusServiceUnavailable, "the action was not accepted, retry with the same action_id: "+err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"action_id": in.MessageID})
}

func (s *Server) patchBotMessage(w http.ResponseWriter, r *http.Request) {
	var e BotEdit
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil || strings.TrimSpace(e.Text) == "" {
		writeError(w, http.StatusBadRequest, "body must be {\"text\", \"buttons\"?} with text")
		return
	}
	message, ok := messageParam(w, r)
	if !ok {
		return
	}
	s.hub.publish(r.PathValue("chat"), "edit", MessageEvent{MessageID: message, Text: e.Text, Buttons: e.Buttons})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) postBotMessage(w http.ResponseWriter, r *http.Request) {
	var m BotMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		writeError(w, http.StatusBadRequest, "body is not a valid bot message: "+err.Error())
		return
	}
	if strings.TrimSpace(m.Text) == "" || m.IdempotencyKey == "" {
		writeError(w, http.StatusBadRequest, "text and idempotency_key are required")
		return
	}
	chat := r.PathValue("chat")
	id, fresh := s.sends.claim(chat+"\x00"+m.IdempotencyKey, func() string { return randomID("b-") })
	if fresh {
		s.hub.publish(chat, "message", MessageEvent{MessageID: id, Text: m.Text, ThreadID: m.ThreadID, ReplyTo: m.ReplyTo, Buttons: m.Buttons})
	}
	writeJSON(w, http.StatusOK, map[string]string{"message_id": id})
}

// ReactionBody is the body of PUT .../reaction; an empty emoji clears.
type ReactionBody struct {
	Emoji string `json:"emoji"`
	State string `json:"state,omitempty"`
}

func (s *Server) putReaction(w http.ResponseWriter, r *http.Request) {
	var b ReactionBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, "body is not a valid reaction: "+err.Error())
		return
	}
	message, ok := messageParam(w, r)
	if !ok {
		return
	}
	s.hub.publish(r.PathValue("chat"), "reaction", ReactionEvent{MessageID: message, Emoji: b.Emoji, State: b.State})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) postTyping(w http.ResponseWriter, r *http.Request) {
	var t TypingEvent
	if err := json.NewDecoder(r.Body).Decode(&t); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "body is not a valid typing event: "+err.Error())
		return
	}
	s.hub.publish(r.PathValue("chat"), "typing", t)
	w.WriteHeader(http.StatusNoContent)
}

// messageParam is the {message} of the path, or a 400 if it is no valid ID.
func messageParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	message := r.PathValue("message")
	if err := pipeline.ValidateID("message", message); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return message, true
}

func servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
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

func writeError(w http.ResponseWriter, status int, reason string) {
	writeJSON(w, status, map[string]string{"error": reason})
}

func randomID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// recentKeys remembers the message ID given to each recent idempotency key,
// so a retried bot send returns the first send's ID instead of posting twice.
type recentKeys struct {
	mu    sync.Mutex
	limit int
	ids   map[string]string
	order []string
}

func newRecentKeys(limit int) *recentKeys {
	return &recentKeys{limit: limit, ids: map[string]string{}}
}

func (k *recentKeys) claim(key string, newID func() string) (id string, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if id, ok := k.ids[key]; ok {
		return id, false
	}
	id = newID()
	k.ids[key] = id
	k.order = append(k.order, key)
	if len(k.order) > k.limit {
		delete(k.ids, k.order[0])
		k.order = k.order[1:]
	}
	return id, true
}

// CloseStreams ends every open event stream; call it before shutting the
// HTTP server down.
func (s *Server) CloseStreams() { s.hub.closeAll() }
