package telegramtest

import (
	"fmt"
	"sort"
)

// Chat is a chat the fake knows.
type Chat struct {
	ID    int64
	Type  string // "private", "group" or "supergroup"
	Title string
	Forum bool
}

// Private is a direct chat with the user whose ID is id.
func Private(id int64) Chat { return Chat{ID: id, Type: "private"} }

// Group is a group chat; Telegram's group IDs are negative.
func Group(id int64) Chat { return Chat{ID: id, Type: "supergroup", Title: "group"} }

// Forum is a supergroup with topics.
func Forum(id int64) Chat { return Chat{ID: id, Type: "supergroup", Title: "forum", Forum: true} }

func (c Chat) wire() wireChat {
	return wireChat{ID: c.ID, Type: c.Type, Title: c.Title, IsForum: c.Forum}
}

// Message is a message in a chat, a user's or the bot's.
type Message struct {
	ID       int
	ChatID   int64
	ThreadID int // the forum topic, 0 outside one
	From     User
	// Text is the visible text; HTML what the bot sent when it used
	// parse_mode HTML.
	Text, HTML string
	ReplyTo    int // 0 when it replies to nothing
	Buttons    [][]Button
	Edits      int
	// Reaction is the bot's reaction on the message now.
	Reaction []string
	// File is a document the bot sent (sendDocument); Text is then its
	// caption.
	File *SentFile
	// VoiceNote is a voice note the bot sent (sendVoice); it has no text.
	VoiceNote *SentFile
	date      int64
	topic     bool // a topic's first (service) message
	caption   bool
	photo     string
	document  *wireDocument
	voice     string
	entities  []wireEntity
}

// Button is an inline keyboard button.
type Button struct{ Text, Data string }

// ReactionChange is one setMessageReaction the fake applied; an empty
// Emoji is a clear.
type ReactionChange struct {
	ChatID    int64
	MessageID int
	Emoji     []string
}

type chatState struct {
	chat         Chat
	nextID       int
	messages     map[int]*Message
	reactionsOff bool
	// userReactions are the users' current reactions, by message and user.
	userReactions map[[2]int64][]string
	reactions     []ReactionChange
	// repliedTo counts the bot's messages that reply to each message, so
	// a rig with many chats waiting for answers asks in constant time.
	repliedTo map[int]int
}

// chatLocked returns the chat, creating it; s.mu must be held.
func (s *Server) chatLocked(c Chat) *chatState {
	st, ok := s.chats[c.ID]
	if !ok {
		if c.Type == "" {
			c.Type = "private"
		}
		st = &chatState{chat: c, messages: map[int]*Message{}, userReactions: map[[2]int64][]string{}}
		s.chats[c.ID] = st
	}
	return st
}

// add stores a new message under the chat's next ID; s.mu must be held.
func (st *chatState) add(m *Message) *Message {
	st.nextID++
	m.ID, m.ChatID = st.nextID, st.chat.ID
	st.messages[m.ID] = m
	if m.From.IsBot && m.ReplyTo != 0 {
		if st.repliedTo == nil {
			st.repliedTo = map[int]int{}
		}
		st.repliedTo[m.ReplyTo]++
	}
	return m
}

// Replies is how many bot messages in the chat reply to message id, in
// constant time (Sent copies every message of the chat).
func (s *Server) Replies(chatID int64, id int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.chats[chatID]; ok {
		return st.repliedTo[id]
	}
	return 0
}

// DisableReactions makes the chat refuse every reaction with
// REACTION_INVALID, as a chat whose admins restricted reactions does.
func (s *Server) DisableReactions(chat Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatLocked(chat).reactionsOff = true
}

// Sent is the bot's messages in the chat, oldest first, as they are now.
func (s *Server) Sent(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chats[chatID]
	if st == nil {
		return nil
	}
	var out []Message
	for _, m := range st.messages {
		if m.From.ID == s.Bot.ID {
			out = append(out, copyMessage(m))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Message is one message as it is now.
func (s *Server) Message(chatID int64, id int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.chats[chatID]; st != nil {
		if m := st.messages[id]; m != nil {
			return copyMessage(m), true
		}
	}
	return Message{}, false
}

// Reactions are the bot's reaction changes on one message, in order.
func (s *Server) Reactions(chatID int64, messageID int) []ReactionChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chats[chatID]
	if st == nil {
		return nil
	}
	var out []ReactionChange
	for _, r := range st.reactions {
		if r.MessageID == messageID {
			out = append(out, r)
		}
	}
	return out
}

func copyMessage(m *Message) Message {
	c := *m
	c.Reaction = append([]string(nil), m.Reaction...)
	c.Buttons = append([][]Button(nil), m.Buttons...)
	return c
}

// wire is the message as Telegram shows it, its reply one level deep.
func (st *chatState) wire(m *Message, depth int) *wireMessage {
	w := &wireMessage{MessageID: m.ID, Chat: st.chat.wire(), Date: m.date}
	from := m.From.wire()
	w.From = &from
	if m.ThreadID != 0 && st.chat.Forum {
		w.MessageThreadID, w.IsTopicMessage = m.ThreadID, true
	}
	if m.topic {
		w.ForumTopicCreated = &struct {
			Name string `json:"name"`
		}{Name: fmt.Sprintf("topic %d", m.ID)}
	}
	if m.caption {
		w.Caption, w.CaptionEntities = m.Text, m.entities
	} else {
		w.Text, w.Entities = m.Text, m.entities
	}
	if m.photo != "" {
		w.Photo = []wirePhotoSize{
			{FileID: m.photo + "-small", FileUniqueID: m.photo + "-s", Width: 90, Height: 90},
			{FileID: m.photo, FileUniqueID: m.photo + "-l", Width: 1280, Height: 960},
		}
	}
	w.Document = m.document
	if m.voice != "" {
		w.Voice = &wireVoice{FileID: m.voice, FileUniqueID: m.voice + "-u", Duration: 3, MimeType: "audio/ogg"}
	}
	if len(m.Buttons) > 0 {
		w.ReplyMarkup = markupOf(m.Buttons)
	}
	replyTo := m.ReplyTo
	if replyTo == 0 && w.IsTopicMessage && !m.topic {
		replyTo = m.ThreadID // Telegram shows a topic message as a reply to the topic's first one
	}
	if r := st.messages[replyTo]; r != nil && depth == 0 {
		w.ReplyToMessage = st.wire(r, depth+1)
	}
	return w
}

func markupOf(buttons [][]Button) *wireMarkup {
	m := &wireMarkup{InlineKeyboard: [][]wireButton{}}
	for _, row := range buttons {
		var r []wireButton
		for _, b := range row {
			r = append(r, wireButton{Text: b.Text, CallbackData: b.Data})
		}
		m.InlineKeyboard = append(m.InlineKeyboard, r)
	}
	return m
}
