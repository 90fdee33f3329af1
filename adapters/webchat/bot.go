package webchat

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// The bot API is what the worker calls (package webchat's Client): send,
// edit, react, typing. One shared secret, REPLYFLOW_WEBCHAT_BOT_TOKEN,
// guards it; the users' sign-in has no part in it.

// bot guards the bot API with the shared token.
func (s *Server) bot(next http.HandlerFunc) http.HandlerFunc { return s.botSized(maxBodyBytes, next) }

// botSized is bot with a body bound of its own (a file is larger than a
// message).
func (s *Server) botSized(limit int64, next http.HandlerFunc) http.HandlerFunc {
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
		r.Body = http.MaxBytesReader(w, r.Body, limit)
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
	// File is a document sent with the text as its caption (POST
	// /bot/chats/{chat}/files only).
	File *FileEvent `json:"file,omitempty"`
}

// BotEdit is the body of PATCH /bot/chats/{chat}/messages/{message}.
type BotEdit struct {
	Text    string            `json:"text"`
	Buttons []pipeline.Button `json:"buttons,omitempty"`
}

func (s *Server) patchBotMessage(w http.ResponseWriter, r *http.Request) {
	var e BotEdit
	if !decodeBody(w, r, &e, "edit") {
		return
	}
	if strings.TrimSpace(e.Text) == "" {
		writeError(w, http.StatusBadRequest, "body must be {\"text\", \"buttons\"?} with text")
		return
	}
	message, ok := messageParam(w, r)
	if !ok {
		return
	}
	chat := r.PathValue("chat")
	ev := MessageEvent{MessageID: message, Text: e.Text, Buttons: e.Buttons}
	data, _ := json.Marshal(ev)
	if err := s.log.EditChatMessage(r.Context(), chat, message, data); err != nil {
		writeLogError(w, err)
		return
	}
	ev.HTML = renderMarkdown(ev.Text)
	s.hub.publish(chat, "edit", ev)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) postBotMessage(w http.ResponseWriter, r *http.Request) {
	var m BotMessage
	if !decodeBody(w, r, &m, "bot message") {
		return
	}
	if strings.TrimSpace(m.Text) == "" || m.IdempotencyKey == "" {
		writeError(w, http.StatusBadRequest, "text and idempotency_key are required")
		return
	}
	s.sendBotMessage(w, r, m.IdempotencyKey, MessageEvent{Text: m.Text, ThreadID: m.ThreadID, ReplyTo: m.ReplyTo, Buttons: m.Buttons})
}

// postBotFile sends a document: a message whose text is the caption, with
// the file in the event (base64 in JSON), which the page offers as a
// download and never renders.
func (s *Server) postBotFile(w http.ResponseWriter, r *http.Request) {
	var m BotMessage
	if !decodeBody(w, r, &m, "bot file") {
		return
	}
	if m.File == nil || m.IdempotencyKey == "" {
		writeError(w, http.StatusBadRequest, "file and idempotency_key are required")
		return
	}
	if err := m.File.check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.sendBotMessage(w, r, m.IdempotencyKey, MessageEvent{Text: m.Text, ThreadID: m.ThreadID, ReplyTo: m.ReplyTo, File: m.File})
}

// sendBotMessage records a bot message in the chat's log and shows it,
// once per idempotency key: a retried send (this gateway's or another's,
// before or after a restart) answers the first send's message ID.
func (s *Server) sendBotMessage(w http.ResponseWriter, r *http.Request, key string, ev MessageEvent) {
	chat := r.PathValue("chat")
	ev.MessageID = randomID("b-")
	id, fresh, err := s.record(r.Context(), chat, "bot:"+key, "message", ev.MessageID, ev)
	if err != nil {
		writeLogError(w, err)
		return
	}
	if fresh {
		ev.HTML = renderMarkdown(ev.Text)
		s.hub.publish(chat, "message", ev)
	}
	writeJSON(w, http.StatusOK, map[string]string{"message_id": id})
}

// record adds a message to the chat's log: the ID it has there (the
// first one's for a key already recorded), and whether it is new.
func (s *Server) record(ctx context.Context, chat, key, kind, id string, ev any) (string, bool, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return "", false, err
	}
	return s.log.AddChatMessage(ctx, adapters.ChatLogMessage{Chat: chat, ID: id, Key: key, Kind: kind, Data: data})
}

// writeLogError answers a bot call whose change the chat's log could not
// record: 503, which the worker retries, as the change is not shown yet.
func writeLogError(w http.ResponseWriter, err error) {
	writeError(w, http.StatusServiceUnavailable, "the web chat could not record this in the chat's history (is the store reachable? REPLYFLOW_STORE_DSN); retry: "+err.Error())
}

// ReactionBody is the body of PUT .../reaction; an empty emoji clears.
type ReactionBody struct {
	Emoji string `json:"emoji"`
	State string `json:"state,omitempty"`
}

func (s *Server) putReaction(w http.ResponseWriter, r *http.Request) {
	var b ReactionBody
	if !decodeBody(w, r, &b, "reaction") {
		return
	}
	message, ok := messageParam(w, r)
	if !ok {
		return
	}
	chat := r.PathValue("chat")
	if err := s.log.SetChatReaction(r.Context(), chat, message, b.Emoji); err != nil {
		writeLogError(w, err)
		return
	}
	s.hub.publish(chat, "reaction", ReactionEvent{MessageID: message, Emoji: b.Emoji, State: b.State})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) postTyping(w http.ResponseWriter, r *http.Request) {
	var t TypingEvent
	if err := json.NewDecoder(r.Body).Decode(&t); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, bodyStatus(err), "body is not a valid typing event: "+err.Error())
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

// decodeBody reads the JSON body into v, or answers 400 (413 when too
// large) saying the body is not a valid what.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, bodyStatus(err), "body is not a valid "+what+": "+err.Error())
		return false
	}
	return true
}
