package slacktest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is an inner event of the Events API, as Slack sends it.
type Event map[string]any

// Post is a message a user (or another bot) writes.
type Post struct {
	Channel  string
	User     string
	Text     string
	ThreadTS string
	// Subtype is a message subtype: "channel_join", "bot_message",
	// "file_share"…; "" for a plain message.
	Subtype string
	BotID   string // for bot_message
	Files   []File // for file_share
	// Wire are fields shown over the fake's own (Message.Wire).
	Wire map[string]any
}

// AddMessage stores a user's post in its channel (creating the channel)
// and returns its events: the message event and, when the text mentions
// the bot, its app_mention twin (with the files of a file_share), as
// Slack sends both for one post.
func (s *Server) AddMessage(p Post) (Message, []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.channelLocked(Channel{ID: p.Channel, Members: 2})
	m := s.add(st, &Message{User: p.User, Text: p.Text, ThreadTS: p.ThreadTS, Subtype: p.Subtype, BotID: p.BotID, Files: p.Files, Wire: p.Wire})
	events := []Event{s.messageEvent(st, m)}
	if strings.Contains(p.Text, "<@"+s.BotUserID+">") && (p.Subtype == "" || p.Subtype == "file_share") {
		mention := Event{"type": "app_mention", "user": m.User, "text": m.Text, "ts": m.TS, "channel": m.Channel, "event_ts": m.TS, "client_msg_id": events[0]["client_msg_id"]}
		if len(m.Files) > 0 {
			mention["files"] = s.wireFiles(m.Files)
		}
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			mention["thread_ts"] = m.ThreadTS
		}
		events = append(events, mention)
	}
	return copyMessage(m), events
}

func (s *Server) messageEvent(st *channelState, m *Message) Event {
	e := Event(s.wire(st, m, true))
	delete(e, "reply_count")
	e["channel"], e["event_ts"] = m.Channel, m.TS
	e["channel_type"] = "channel"
	if st.ch.IM() {
		e["channel_type"] = "im"
	}
	if m.Subtype == "" {
		e["client_msg_id"] = "msg-" + m.TS
	}
	if m.Subtype == "bot_message" {
		delete(e, "user")
	}
	return e
}

// ReactionAdded is a user's reaction_added event on a message.
func ReactionAdded(user, reaction, channel, ts string) Event {
	return Event{"type": "reaction_added", "user": user, "reaction": reaction, "event_ts": ts,
		"item": map[string]string{"type": "message", "channel": channel, "ts": ts}}
}

// EventCallback wraps an event in the event_callback body Slack sends,
// with a fresh event_id.
func (s *Server) EventCallback(e Event) []byte {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	body, _ := json.Marshal(map[string]any{
		"token": "verification-token", "team_id": s.TeamID, "api_app_id": s.AppID,
		"event": e, "type": "event_callback", "event_id": fmt.Sprintf("Ev%08d", id), "event_time": time.Now().Unix(),
		"authorizations":        []map[string]any{{"team_id": s.TeamID, "user_id": s.BotUserID, "is_bot": true}},
		"event_context":         fmt.Sprintf("ctx-%d", id),
		"is_ext_shared_channel": false,
	})
	return body
}

// BlockAction is a click on a button of a message.
type BlockAction struct {
	Channel, User, MessageTS, ThreadTS string
	ActionID, BlockID, Value           string
}

// BlockActions is the block_actions interactivity payload of a click.
func (s *Server) BlockActions(a BlockAction) []byte {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	msg := map[string]any{"type": "message", "ts": a.MessageTS, "user": s.BotUserID, "bot_id": s.BotID}
	if a.ThreadTS != "" {
		msg["thread_ts"] = a.ThreadTS
	}
	body, _ := json.Marshal(map[string]any{
		"type": "block_actions", "api_app_id": s.AppID, "token": "verification-token",
		"trigger_id": fmt.Sprintf("trigger-%d", id), "response_url": s.URL() + "/response/" + strconv.Itoa(id),
		"user":      map[string]string{"id": a.User, "team_id": s.TeamID},
		"team":      map[string]string{"id": s.TeamID},
		"channel":   map[string]string{"id": a.Channel},
		"container": map[string]any{"type": "message", "message_ts": a.MessageTS, "channel_id": a.Channel, "thread_ts": a.ThreadTS},
		"message":   msg,
		"actions": []map[string]any{{"type": "button", "action_id": a.ActionID, "block_id": a.BlockID, "value": a.Value,
			"action_ts": fmt.Sprintf("%d.%06d", time.Now().Unix(), id)}},
	})
	return body
}

// SendEvent queues an events_api envelope carrying the event for the
// socket and returns its envelope_id.
func (s *Server) SendEvent(e Event) string {
	return s.enqueue("events_api", s.EventCallback(e), false)
}

// SendInteractive queues an interactive envelope carrying payload (as
// BlockActions builds it) and returns its envelope_id.
func (s *Server) SendInteractive(payload []byte) string {
	return s.enqueue("interactive", payload, true)
}

// Redelivery marks an HTTP request as Slack's retry of an earlier one.
type Redelivery struct {
	Num    int    // X-Slack-Retry-Num; 0 for a first delivery
	Reason string // X-Slack-Retry-Reason, such as "http_timeout"
}

// EventRequest is an Events API POST of the event to target, signed as
// Slack signs it.
func (s *Server) EventRequest(ctx context.Context, target string, e Event, r Redelivery) *http.Request {
	return s.SignedRequest(ctx, target, "application/json", s.EventCallback(e), r)
}

// URLVerificationRequest is the challenge Slack sends when the events
// URL is set.
func (s *Server) URLVerificationRequest(ctx context.Context, target, challenge string) *http.Request {
	body, _ := json.Marshal(map[string]string{"token": "verification-token", "challenge": challenge, "type": "url_verification"})
	return s.SignedRequest(ctx, target, "application/json", body, Redelivery{})
}

// InteractionRequest is an interactivity POST of payload (form-encoded
// payload=, as Slack sends it) to target, signed.
func (s *Server) InteractionRequest(ctx context.Context, target string, payload []byte, r Redelivery) *http.Request {
	body := url.Values{"payload": {string(payload)}}.Encode()
	return s.SignedRequest(ctx, target, "application/x-www-form-urlencoded", []byte(body), r)
}

// SignedRequest is a POST of body to target with Slack's signature
// headers for the fake's SigningSecret, signed now.
func (s *Server) SignedRequest(ctx context.Context, target, contentType string, body []byte, r Redelivery) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		panic("slacktest: bad target URL " + target + ": " + err.Error())
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", Sign(s.SigningSecret, ts, body))
	if r.Num > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(r.Num))
		req.Header.Set("X-Slack-Retry-Reason", r.Reason)
	}
	return req
}

// Sign is Slack's request signature: v0=hex(hmac_sha256(secret,
// "v0:"+timestamp+":"+body)).
func Sign(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + timestamp + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
