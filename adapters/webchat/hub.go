package webchat

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Event is one thing the bot did in a chat, as sent on the event stream.
type Event struct {
	ID   string          `json:"-"`
	Type string          `json:"-"`
	Data json.RawMessage `json:"-"`
}

// Event payloads, as docs/webchat.md documents them.
type (
	MessageEvent struct {
		MessageID string            `json:"message_id"`
		Text      string            `json:"text"`
		ThreadID  string            `json:"thread_id,omitempty"`
		ReplyTo   string            `json:"reply_to,omitempty"`
		Buttons   []pipeline.Button `json:"buttons,omitempty"`
		File      *FileEvent        `json:"file,omitempty"`
		// HTML is Text rendered from Markdown and sanitized
		// (renderMarkdown): what the page shows. It is rendered as the
		// message is shown, never stored.
		HTML string `json:"html,omitempty"`
	}
	ReactionEvent struct {
		MessageID string `json:"message_id"`
		Emoji     string `json:"emoji"`
		State     string `json:"state"`
	}
	TypingEvent struct {
		ThreadID string `json:"thread_id,omitempty"`
	}
	// UserEvent is a user message the gateway accepted, so that a page
	// that reloads, or another tab, shows both sides of the chat.
	UserEvent struct {
		MessageID  string `json:"message_id"`
		SenderID   string `json:"sender_id"`
		SenderName string `json:"sender_name,omitempty"`
		Text       string `json:"text"`
		ThreadID   string `json:"thread_id,omitempty"`
		ReplyTo    string `json:"reply_to,omitempty"`
		// Files are the files the user uploaded with it: their names,
		// never their bytes (the store keeps those for the model).
		Files []UploadEvent `json:"files,omitempty"`
	}
	// UploadEvent names a file a user uploaded.
	UploadEvent struct {
		Name        string `json:"name"`
		ContentType string `json:"content_type"`
		Size        int    `json:"size"`
	}
)

// momentary events are sent to open streams only: replayed later, a
// typing indicator would show a bot typing long after it stopped.
var momentary = map[string]bool{"typing": true}

// The hub's bounds. A chat's backlog keeps its newest backlogPerChat
// events and at most backlogBytesPerChat of them (a user message is up
// to 32 KiB of text, and several times that once JSON escapes it; a bot
// file is up to 256 KiB in base64), always its newest event. All
// backlogs together hold at most maxBacklogBytes: past it, other chats'
// backlogs are dropped, those nobody watches first, then those touched
// least recently, so a crowd of chats cannot hold more memory than that.
// Chats are at most maxChats while some are idle (an idle one is
// forgotten for a new one); a watched chat is kept, so past it they are
// bounded by the open streams. Each stream queues at most
// subscriberQueue events, which share the backlog's bytes.
const (
	backlogPerChat      = 200
	backlogBytesPerChat = 2 << 20
	maxBacklogBytes     = 128 << 20
	subscriberQueue     = 256
	maxChats            = 10000
)

// hub fans events out to the streams of each chat and keeps a short backlog
// so a stream that reconnects with Last-Event-ID misses nothing. Event IDs
// carry the hub's epoch so a backlog from a previous gateway process is never
// confused with this one's.
type hub struct {
	epoch string
	mu    sync.Mutex
	chats map[string]*chatLog
	// bytes is what every chat's backlog holds (eventBytes).
	bytes int
}

type chatLog struct {
	seq     uint64
	backlog []Event
	bytes   int // of backlog
	subs    map[chan Event]struct{}
	touched time.Time
}

// eventBytes is what an event in a backlog holds in memory, near enough.
func eventBytes(ev Event) int { return len(ev.ID) + len(ev.Type) + len(ev.Data) }

func newHub(epoch string) *hub {
	return &hub{epoch: epoch, chats: map[string]*chatLog{}}
}

func (h *hub) chat(id string) *chatLog {
	c := h.chats[id]
	if c == nil {
		if len(h.chats) >= maxChats {
			h.evictIdle()
		}
		c = &chatLog{subs: map[chan Event]struct{}{}}
		h.chats[id] = c
	}
	c.touched = time.Now()
	return c
}

// evictIdle drops the least recently used chat that nobody is watching.
func (h *hub) evictIdle() {
	var oldest string
	var at time.Time
	for id, c := range h.chats {
		if len(c.subs) == 0 && (oldest == "" || c.touched.Before(at)) {
			oldest, at = id, c.touched
		}
	}
	if oldest != "" {
		h.bytes -= h.chats[oldest].bytes
		delete(h.chats, oldest)
	}
}

// trim drops c's oldest events past its bounds, keeping its newest; then,
// while all backlogs together hold more than maxBacklogBytes, the
// backlogs of the other chats, those nobody watches first, then those
// touched least recently, and last c's own older events. A chat whose
// backlog went keeps its sequence, so its event IDs still only grow.
func (h *hub) trim(c *chatLog) {
	drop := func(c *chatLog) {
		n := eventBytes(c.backlog[0])
		c.backlog[0] = Event{}
		c.backlog = c.backlog[1:]
		c.bytes -= n
		h.bytes -= n
	}
	for len(c.backlog) > 1 && (len(c.backlog) > backlogPerChat || c.bytes > backlogBytesPerChat) {
		drop(c)
	}
	for h.bytes > maxBacklogBytes {
		var v *chatLog
		for _, other := range h.chats {
			if other == c || other.bytes == 0 {
				continue
			}
			idle, vIdle := len(other.subs) == 0, v != nil && len(v.subs) == 0
			if v == nil || (idle && !vIdle) || (idle == vIdle && other.touched.Before(v.touched)) {
				v = other
			}
		}
		switch {
		case v != nil:
			h.bytes -= v.bytes
			v.backlog, v.bytes = nil, 0
		case len(c.backlog) > 1:
			drop(c)
		default:
			return
		}
	}
}

func (h *hub) publish(chat, typ string, payload any) {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("webchat: event %s does not marshal: %v", typ, err))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.chat(chat)
	c.seq++
	ev := Event{ID: h.epoch + "-" + strconv.FormatUint(c.seq, 10), Type: typ, Data: data}
	if !momentary[typ] {
		c.backlog = append(c.backlog, ev)
		n := eventBytes(ev)
		c.bytes += n
		h.bytes += n
		h.trim(c)
	}
	for sub := range c.subs {
		select {
		case sub <- ev:
		default:
			// A stream this far behind is closed; its client reconnects
			// with Last-Event-ID and catches up from the backlog.
			delete(c.subs, sub)
			close(sub)
		}
	}
}

// subscribe returns the events after lastID that are still in the backlog
// (all of it when lastID is empty and replayAll is set), and a channel of
// the ones to come. The channel is closed if the subscriber falls behind.
func (h *hub) subscribe(chat, lastID string, replayAll bool) ([]Event, chan Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.chat(chat)
	sub := make(chan Event, subscriberQueue)
	c.subs[sub] = struct{}{}
	if lastID == "" && replayAll {
		return append([]Event(nil), c.backlog...), sub
	}
	return h.missed(c, lastID), sub
}

func (h *hub) missed(c *chatLog, lastID string) []Event {
	if lastID == "" {
		return nil
	}
	epoch, seqText, ok := strings.Cut(lastID, "-")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if !ok || err != nil || epoch != h.epoch {
		return append([]Event(nil), c.backlog...)
	}
	var out []Event
	for _, ev := range c.backlog {
		if evSeq, _ := strconv.ParseUint(ev.ID[len(h.epoch)+1:], 10, 64); evSeq > seq {
			out = append(out, ev)
		}
	}
	return out
}

func (h *hub) unsubscribe(chat string, sub chan Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.chats[chat]; c != nil {
		if _, ok := c.subs[sub]; ok {
			delete(c.subs, sub)
			close(sub)
		}
	}
}

// closeAll ends every open stream, so a server shutting down is not held
// open by streams that never end on their own. Clients reconnect with
// Last-Event-ID to the next gateway.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.chats {
		for sub := range c.subs {
			delete(c.subs, sub)
			close(sub)
		}
	}
}
