package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode/utf16"
)

// defaultAllowed are the update types Telegram sends when a bot never
// named any: message_reaction is not among them.
func defaultAllowed() map[string]bool {
	return map[string]bool{"message": true, "edited_message": true, "callback_query": true}
}

// Incoming is a message a user writes.
type Incoming struct {
	Chat Chat
	From User
	Text string
	// Caption is the text of a photo or a document.
	Caption string
	// Topic is the forum topic, as CreateTopic returned it.
	Topic   int
	ReplyTo int
	// Photo is the photo's file ID.
	Photo    string
	Document *Document
	// Voice is a voice note's file ID (audio/ogg).
	Voice string
}

// Document is an attached file.
type Document struct{ FileID, FileName, MimeType string }

// mentionPattern finds what Telegram marks as mention and bot_command
// entities.
var (
	mentionPattern = regexp.MustCompile(`@[A-Za-z0-9_]{3,32}`)
	commandPattern = regexp.MustCompile(`^/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?`)
)

// entitiesOf marks mentions and a leading command, with UTF-16 offsets
// as Telegram counts them.
func entitiesOf(text string) []wireEntity {
	var out []wireEntity
	units := func(byteOffset int) int { return len(utf16.Encode([]rune(text[:byteOffset]))) }
	if loc := commandPattern.FindStringIndex(text); loc != nil {
		out = append(out, wireEntity{Type: "bot_command", Offset: 0, Length: units(loc[1])})
	}
	for _, loc := range mentionPattern.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && text[loc[0]-1] != ' ' && text[loc[0]-1] != '\n' {
			continue // part of a command or an e-mail address
		}
		out = append(out, wireEntity{Type: "mention", Offset: units(loc[0]), Length: units(loc[1]) - units(loc[0])})
	}
	return out
}

// AddMessage queues the update of a user's message and returns the
// message's ID.
func (s *Server) AddMessage(in Incoming) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chatLocked(in.Chat)
	if first := st.messages[in.Topic]; in.Topic != 0 && (first == nil || !first.topic) {
		panic("telegramtest: no topic " + strconv.Itoa(in.Topic) + " in this chat; open it with CreateTopic")
	}
	m := &Message{From: in.From, ThreadID: in.Topic, Text: in.Text, ReplyTo: in.ReplyTo, photo: in.Photo, voice: in.Voice, date: s.now().Unix()}
	if in.Text == "" && in.Caption != "" {
		m.Text, m.caption = in.Caption, true
	}
	if d := in.Document; d != nil {
		m.document = &wireDocument{FileID: d.FileID, FileUniqueID: d.FileID + "-u", FileName: d.FileName, MimeType: d.MimeType}
		m.caption = m.Text != ""
	}
	if m.photo != "" || m.voice != "" {
		m.caption = m.Text != ""
	}
	m.entities = entitiesOf(m.Text)
	st.add(m)
	s.queueLocked(wireUpdate{Message: st.wire(m, 0)})
	return m.ID
}

// CreateTopic opens a topic in a forum and returns its ID, the ID of its
// first (service) message.
func (s *Server) CreateTopic(chat Chat, creator User) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chatLocked(chat)
	m := st.add(&Message{From: creator, topic: true, date: s.now().Unix()})
	m.ThreadID = m.ID
	return m.ID
}

// AddEdit queues an edited_message update: the message's new text.
func (s *Server) AddEdit(chatID int64, messageID int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chats[chatID]
	m := st.messages[messageID]
	m.Text, m.entities = text, entitiesOf(text)
	m.Edits++
	w := st.wire(m, 0)
	w.EditDate = s.now().Unix()
	s.queueLocked(wireUpdate{EditedMessage: w})
}

// AddCallbackQuery queues a press of the button with data on the bot's
// message, and returns the query's ID.
func (s *Server) AddCallbackQuery(from User, chatID int64, messageID int, data string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextQuery++
	id := "q" + strconv.Itoa(s.nextQuery)
	st := s.chats[chatID]
	s.callbacks[id] = &callbackState{}
	s.queueLocked(wireUpdate{CallbackQuery: &wireCallbackQuery{
		ID: id, From: from.wire(), Message: st.wire(st.messages[messageID], 0),
		ChatInstance: strconv.FormatInt(chatID, 10), Data: data,
	}})
	return id
}

// AddMessageReaction queues a user's reaction change on a message: the
// reaction becomes emoji (none clears it). It returns the update's ID.
func (s *Server) AddMessageReaction(from User, chatID int64, messageID int, emoji ...string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.chats[chatID]
	key := [2]int64{int64(messageID), from.ID}
	u := from.wire()
	update := wireUpdate{MessageReaction: &wireMessageReaction{
		Chat: st.chat.wire(), MessageID: messageID, User: &u, Date: s.now().Unix(),
		OldReaction: reactionsOf(st.userReactions[key]), NewReaction: reactionsOf(emoji),
	}}
	st.userReactions[key] = emoji
	return s.queueLocked(update)
}

func reactionsOf(emoji []string) []wireReaction {
	out := []wireReaction{}
	for _, e := range emoji {
		out = append(out, wireReaction{Type: "emoji", Emoji: e})
	}
	return out
}

type callbackState struct {
	answered bool
	text     string
}

// Answered reports whether a button press was answered, and with what.
func (s *Server) Answered(queryID string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.callbacks[queryID]; c != nil {
		return c.answered, c.text
	}
	return false, ""
}

// updateRetention is how long Telegram keeps an update the bot has not
// confirmed, in both modes: after it, the update is gone, and the Bot API
// has no method that fetches it again. The fake drops updates as old by
// its clock (see Advance); it is also the bound of the fake's queue.
const updateRetention = 24 * time.Hour

func (s *Server) queueLocked(u wireUpdate) int64 {
	s.nextUpdate++
	u.UpdateID = s.nextUpdate
	u.queued = s.now()
	s.updates = append(s.updates, u)
	s.touch()
	return u.UpdateID
}

// Pending is the number of updates not yet confirmed by a getUpdates
// offset past them (or a webhook's 2xx), nor dropped as too old.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return len(s.updates)
}

// Advance moves the fake's clock on by d, as time passing at Telegram:
// updates queued updateRetention ago or more are dropped.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.now
	s.now = func() time.Time { return before().Add(d) }
	s.touch()
}

// expireLocked drops the updates Telegram no longer keeps; s.mu must be
// held.
func (s *Server) expireLocked() {
	now := s.now()
	kept := s.updates[:0]
	for _, u := range s.updates {
		if now.Sub(u.queued) < updateRetention {
			kept = append(kept, u)
			continue
		}
		delete(s.hook.retryAt, u.UpdateID)
		delete(s.hook.failures, u.UpdateID)
	}
	s.updates = kept
}

// Updates returns the pending updates as Telegram would send them, for a
// test that posts one to a webhook.
func (s *Server) Updates() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	var out []json.RawMessage
	for _, u := range s.updates {
		body, _ := json.Marshal(u)
		out = append(out, body)
	}
	return out
}

// allowLocked takes the update types a call's allowed_updates names, as
// Telegram keeps the last ones asked for; s.mu must be held.
func (s *Server) allowLocked(p map[string]string) {
	raw, ok := p["allowed_updates"]
	if !ok {
		return
	}
	var kinds []string
	if json.Unmarshal([]byte(raw), &kinds) == nil && len(kinds) > 0 {
		s.allowed = map[string]bool{}
		for _, k := range kinds {
			s.allowed[k] = true
		}
	}
}

// maxPoll caps a long poll, so a test's fake never holds a request for
// as long as Telegram's 50 s.
const maxPoll = 10 * time.Second

// getUpdates has Telegram's semantics: an offset confirms, and drops, every
// update below it; the rest are returned, up to limit, of the allowed
// types; with none, it waits up to timeout seconds for one.
func (s *Server) getUpdates(ctx context.Context, p map[string]string) (int, wireResponse) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p["timeout"])
	wait := min(time.Duration(timeout)*time.Second, maxPoll)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.webhook != "" {
			s.mu.Unlock()
			return http.StatusConflict, wireResponse{ErrorCode: http.StatusConflict, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
		}
		s.allowLocked(p)
		batch := s.confirmLocked(offset, limit)
		if len(batch) > 0 || wait <= 0 {
			s.mu.Unlock()
			return ok(batch)
		}
		s.waiting++
		s.touch()
		changed := s.feed.Changed()
		s.mu.Unlock()
		doneWaiting := func() {
			s.mu.Lock()
			s.waiting--
			s.mu.Unlock()
		}
		select {
		case <-changed:
			doneWaiting()
		case <-deadline.C:
			doneWaiting()
			return ok([]wireUpdate{})
		case <-ctx.Done():
			doneWaiting()
			return ok([]wireUpdate{})
		}
	}
}

// confirmLocked drops the updates below offset, those of types not
// allowed and those too old, and returns up to limit of the rest; s.mu
// must be held.
func (s *Server) confirmLocked(offset int64, limit int) []wireUpdate {
	s.expireLocked()
	kept := s.updates[:0]
	for _, u := range s.updates {
		if u.UpdateID >= offset && s.allowed[u.kind()] {
			kept = append(kept, u)
		}
	}
	s.updates = kept
	batch := []wireUpdate{}
	for _, u := range s.updates {
		if len(batch) == limit {
			break
		}
		batch = append(batch, u)
	}
	return batch
}
