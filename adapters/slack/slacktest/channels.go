package slacktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
)

// Channel is a conversation the fake knows.
type Channel struct {
	ID      string // "C…" for a channel, "D…" for a direct message
	Name    string
	Private bool
	Members int // num_members
}

// IM says whether the channel is a direct message.
func (c Channel) IM() bool { return strings.HasPrefix(c.ID, "D") }

// Message is a message in a channel, a user's or the bot's.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // "" outside a thread; the parent's own ts on a parent with replies
	User     string // the author; the bot's user ID on the bot's messages
	BotID    string // set on the bot's messages and bot_message posts
	Text     string
	Subtype  string
	Blocks   json.RawMessage
	Metadata *Metadata
	Mrkdwn   string // the mrkdwn field as sent: "", "true" or "false"
	Files    []File
	Edits    int
	// Reactions are the bot's reactions on the message now, in the order
	// it added them.
	Reactions []string
	// Wire are fields the Web API and the message event show over the
	// fake's own, as given: a block or a field's JSON type slack-go does
	// not know yet. The fake itself goes by TS.
	Wire map[string]any
}

// Metadata is a message's metadata as chat.postMessage takes it.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// File is a file shared in a message.
type File struct {
	ID, Name, Mimetype string
	// Subtype is "slack_audio" for an audio clip recorded in Slack; ""
	// for an uploaded file.
	Subtype string
	// Data is the file's content: the bot's uploads', and a user's
	// message's where the test gives it (url_private serves it).
	Data []byte
	// Size is the size files.info reports; zero reports len(Data). A
	// file with a Size and no Data is one url_private no longer serves
	// (a 404) though files.info still describes it.
	Size int
	// Deleted is a file deleted after it was shared: files.info answers
	// file_deleted and url_private 404, as Slack does.
	Deleted bool
}

// Status is one assistant.threads.setStatus the fake applied.
type Status struct {
	Channel, ThreadTS, Status string
	LoadingMessages           string
}

// Ephemeral is a chat.postEphemeral the fake applied.
type Ephemeral struct {
	Channel, User, ThreadTS, Text, TS string
	Blocks                            json.RawMessage
}

type channelState struct {
	ch       Channel
	messages map[string]*Message
}

// AddChannel makes a channel known; methods on unknown channels answer
// channel_not_found.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channelLocked(c)
	s.touch()
}

// channelLocked returns the channel, creating it; s.mu must be held.
func (s *Server) channelLocked(c Channel) *channelState {
	st, ok := s.channels[c.ID]
	if !ok {
		if c.Name == "" {
			c.Name = strings.ToLower(c.ID)
		}
		st = &channelState{ch: c, messages: map[string]*Message{}}
		s.channels[c.ID] = st
	}
	return st
}

// newTS is the next message timestamp: when it is posted, in
// microseconds, unique and rising, as Slack's; s.mu must be held.
func (s *Server) newTS() string {
	s.lastTS = max(time.Now().UnixMicro(), s.lastTS+1)
	return fmt.Sprintf("%d.%06d", s.lastTS/1_000_000, s.lastTS%1_000_000)
}

// add stores m under a new ts; s.mu must be held.
func (s *Server) add(st *channelState, m *Message) *Message {
	m.Channel, m.TS = st.ch.ID, s.newTS()
	if parent := st.messages[m.ThreadTS]; parent != nil && parent.ThreadTS == "" {
		parent.ThreadTS = parent.TS
	}
	st.messages[m.TS] = m
	s.touch()
	return m
}

// Messages are the channel's messages, of everyone, oldest first.
func (s *Server) Messages(channel string) []Message {
	return s.messagesWhere(channel, func(*Message) bool { return true })
}

// Sent are the bot's messages in the channel, oldest first, as they are
// now.
func (s *Server) Sent(channel string) []Message {
	return s.messagesWhere(channel, func(m *Message) bool { return m.User == s.BotUserID })
}

// Thread is a thread's parent and replies, oldest first.
func (s *Server) Thread(channel, threadTS string) []Message {
	return s.messagesWhere(channel, func(m *Message) bool { return m.TS == threadTS || m.ThreadTS == threadTS })
}

// Message is one message as it is now.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.channels[channel]; st != nil {
		if m := st.messages[ts]; m != nil {
			return copyMessage(m), true
		}
	}
	return Message{}, false
}

// Reactions are the bot's reactions on a message now.
func (s *Server) Reactions(channel, ts string) []string {
	m, _ := s.Message(channel, ts)
	return m.Reactions
}

// Statuses are the assistant statuses set on a thread, in order.
func (s *Server) Statuses(channel, threadTS string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, st := range s.statuses {
		if st.Channel == channel && st.ThreadTS == threadTS {
			out = append(out, st)
		}
	}
	return out
}

// Ephemerals are the ephemeral messages posted in a channel, in order.
func (s *Server) Ephemerals(channel string) []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ephemeral
	for _, e := range s.ephemera {
		if e.Channel == channel {
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) messagesWhere(channel string, keep func(*Message) bool) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.channels[channel]
	if st == nil {
		return nil
	}
	var out []Message
	for _, m := range sortedMessages(st) {
		if keep(m) {
			out = append(out, copyMessage(m))
		}
	}
	return out
}

func sortedMessages(st *channelState) []*Message {
	out := make([]*Message, 0, len(st.messages))
	for _, m := range st.messages {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out
}

func copyMessage(m *Message) Message {
	c := *m
	c.Reactions = append([]string(nil), m.Reactions...)
	c.Files = append([]File(nil), m.Files...)
	c.Wire = maps.Clone(m.Wire)
	return c
}

// wire is the message as the Web API shows it.
func (s *Server) wire(st *channelState, m *Message, withMetadata bool) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
	set := func(k, v string) {
		if v != "" {
			w[k] = v
		}
	}
	set("user", m.User)
	set("bot_id", m.BotID)
	set("subtype", m.Subtype)
	set("thread_ts", m.ThreadTS)
	if m.User == s.BotUserID {
		w["app_id"] = s.AppID
	}
	if len(m.Blocks) > 0 {
		w["blocks"] = m.Blocks
	}
	if m.Metadata != nil && withMetadata {
		w["metadata"] = m.Metadata
	}
	if len(m.Files) > 0 {
		w["files"] = s.wireFiles(m.Files)
	}
	if m.ThreadTS == m.TS {
		replies := 0
		for _, r := range st.messages {
			if r.ThreadTS == m.TS && r.TS != m.TS {
				replies++
			}
		}
		w["reply_count"] = replies
	}
	if len(m.Reactions) > 0 {
		var rs []map[string]any
		for _, name := range m.Reactions {
			rs = append(rs, map[string]any{"name": name, "users": []string{s.BotUserID}, "count": 1})
		}
		w["reactions"] = rs
	}
	maps.Copy(w, m.Wire)
	return w
}

func (s *Server) wireFiles(files []File) []map[string]any {
	var out []map[string]any
	for _, f := range files {
		out = append(out, withClip(f, map[string]any{"id": f.ID, "name": f.Name, "mimetype": f.Mimetype, "url_private": s.privateURL(f)}))
	}
	return out
}

// withClip adds to a file object what Slack's file objects say of an
// audio clip: its subtype, and that Slack plays it as audio.
func withClip(f File, w map[string]any) map[string]any {
	if f.Subtype != "" {
		w["subtype"] = f.Subtype
	}
	if f.Subtype == "slack_audio" {
		w["media_display_type"] = "audio"
	}
	return w
}
