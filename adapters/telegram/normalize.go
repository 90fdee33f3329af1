package telegram

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Channel is the channel name of Telegram sessions.
const Channel = "telegram"

// Identity is who the bot is: its ID (the session key's account) and its
// username, which mentions and commands address.
type Identity struct {
	ID       int64
	Username string
}

// Account is the bot's part of its session keys.
func (id Identity) Account() string { return strconv.FormatInt(id.ID, 10) }

// Event is what one update becomes: a message for the session, a
// feedback event, or nothing (Skip says why). CallbackID is set for a
// button press, which must be answered once accepted.
type Event struct {
	Inbound    *pipeline.Inbound
	Feedback   *pipeline.Feedback
	CallbackID string
	Skip       string
}

// Thread IDs as Inbound.ThreadID carries them.
const (
	topicPrefix = "topic-"
	replyPrefix = "reply-"
)

// topicOf returns the forum topic a thread ID names, if it names one.
func topicOf(threadID string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(threadID, topicPrefix))
	if !strings.HasPrefix(threadID, topicPrefix) || err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// Normalize turns one update into an Event. It never fails on content: an
// update it cannot use is skipped with a reason; the Inbound it builds is
// validated by the caller.
func Normalize(bot Identity, u *models.Update, now time.Time) Event {
	switch {
	case u.Message != nil:
		return messageEvent(bot, u.Message, now)
	case u.EditedMessage != nil:
		// An edit keeps its message ID, so the session's dedupe drops
		// it: what was answered stays answered (docs/telegram.md, "Edits").
		return messageEvent(bot, u.EditedMessage, now)
	case u.CallbackQuery != nil:
		return callbackEvent(bot, u.CallbackQuery, now)
	case u.MessageReaction != nil:
		return reactionEvent(bot, u.ID, u.MessageReaction, now)
	}
	return Event{Skip: "update type not handled"}
}

func messageEvent(bot Identity, m *models.Message, now time.Time) Event {
	sender, name, isBot := senderOf(m)
	if sender == "" {
		return Event{Skip: "message without a sender"}
	}
	if m.Chat.Type == models.ChatTypeChannel {
		return Event{Skip: "channel post"}
	}
	in := pipeline.Inbound{
		Channel:     Channel,
		Account:     bot.Account(),
		ChatID:      strconv.FormatInt(m.Chat.ID, 10),
		ChatType:    pipeline.ChatGroup,
		MessageID:   strconv.Itoa(m.ID),
		SenderID:    sender,
		SenderName:  name,
		SenderIsBot: isBot,
		Text:        m.Text,
		Media:       mediaOf(m),
		ReceivedAt:  adapters.ReceivedAt(now, time.Unix(int64(m.Date), 0)),
	}
	if m.Chat.Type == models.ChatTypePrivate {
		in.ChatType = pipeline.ChatDirect
	}
	entities := m.Entities
	if in.Text == "" {
		in.Text, entities = m.Caption, m.CaptionEntities
	}
	in.MentionsBot, in.MentionsOthers = mentions(bot, in.Text, entities)
	in.Text = stripCommandAddress(bot, in.Text)
	topic := m.MessageThreadID != 0 && (m.IsTopicMessage || m.Chat.IsForum)
	if r := m.ReplyToMessage; r != nil && !(topic && r.ID == m.MessageThreadID) {
		// In a forum every topic message "replies" to the topic's first
		// message; only a reply to anything else is a reply.
		in.ReplyTo = strconv.Itoa(r.ID)
		in.ReplyToBot = r.From != nil && r.From.ID == bot.ID
	}
	switch {
	case topic:
		in.ThreadID = topicPrefix + strconv.Itoa(m.MessageThreadID)
	case in.ReplyTo != "":
		in.ThreadID = replyPrefix + in.ReplyTo
	}
	if in.Text == "" && len(in.Media) == 0 {
		return Event{Skip: "message without text or media"}
	}
	return Event{Inbound: &in}
}

// senderOf is who sent m. A message sent on behalf of a chat (an
// anonymous group admin, a member posting as a channel, a linked
// channel's automatic forward) is the chat's, in sender_chat: its from is
// then a stand-in user that Telegram uses in every chat alike
// (GroupAnonymousBot, Channel_Bot, Telegram), and taken as the sender it
// would let one chat's anonymous admins speak, claim and decide as every
// other chat's, the owners and the allowed among them. Whether it is a bot
// is still from's, which the engagement rules weigh.
func senderOf(m *models.Message) (id, name string, isBot bool) {
	if c := m.SenderChat; c != nil {
		return strconv.FormatInt(c.ID, 10), pipeline.ClipName(c.Title), m.From != nil && m.From.IsBot
	}
	if u := m.From; u != nil {
		return strconv.FormatInt(u.ID, 10), displayName(*u), u.IsBot
	}
	return "", "", false
}

func displayName(u models.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	if len(name) > pipeline.MaxNameBytes {
		name = strings.ToValidUTF8(name[:pipeline.MaxNameBytes], "")
	}
	return name
}

// mediaOf keeps references to the message's attachments; their bytes stay
// with Telegram until a tool fetches them. An attachment without a file ID
// is none (nothing could fetch it), and a name is clipped as every
// platform's is.
func mediaOf(m *models.Message) []pipeline.Media {
	var out []pipeline.Media
	add := func(kind, id, mime, name string) {
		if id != "" {
			out = append(out, pipeline.Media{Kind: kind, Ref: id, MimeType: mime, Name: pipeline.ClipFileName(name)})
		}
	}
	if n := len(m.Photo); n > 0 {
		add("photo", m.Photo[n-1].FileID, "image/jpeg", "") // Telegram lists sizes smallest first
	}
	if d := m.Document; d != nil {
		add("document", d.FileID, d.MimeType, d.FileName)
	}
	if v := m.Video; v != nil {
		add("video", v.FileID, v.MimeType, v.FileName)
	}
	if a := m.Audio; a != nil {
		add("audio", a.FileID, a.MimeType, a.FileName)
	}
	if v := m.Voice; v != nil {
		add("voice", v.FileID, v.MimeType, "")
	}
	return out
}

// mentions reads the message's entities: an @mention or text mention of
// the bot, or a command addressed to it, mentions the bot; of anyone else,
// mentions others.
func mentions(bot Identity, text string, entities []models.MessageEntity) (us, others bool) {
	units := utf16.Encode([]rune(text))
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		span := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case models.MessageEntityTypeMention:
			if bot.Username != "" && strings.EqualFold(strings.TrimPrefix(span, "@"), bot.Username) {
				us = true
			} else {
				others = true
			}
		case models.MessageEntityTypeTextMention:
			if e.User != nil && e.User.ID == bot.ID {
				us = true
			} else {
				others = true
			}
		case models.MessageEntityTypeBotCommand:
			if _, addressee, ok := strings.Cut(span, "@"); ok {
				if strings.EqualFold(addressee, bot.Username) {
					us = true
				} else {
					others = true
				}
			}
		}
	}
	return us, others
}

// stripCommandAddress turns "/status@this_bot args" into "/status args", so
// the command parser sees the command the user meant.
func stripCommandAddress(bot Identity, text string) string {
	if bot.Username == "" || !strings.HasPrefix(text, "/") {
		return text
	}
	cmd, rest, _ := strings.Cut(text, " ")
	name, addressee, ok := strings.Cut(cmd, "@")
	if !ok || !strings.EqualFold(addressee, bot.Username) {
		return text
	}
	if rest == "" {
		return name
	}
	return name + " " + rest
}

func callbackEvent(bot Identity, q *models.CallbackQuery, now time.Time) Event {
	m := q.Message.Message
	if m == nil || q.Data == "" {
		// A press on a message too old to read, or a game button.
		return Event{CallbackID: q.ID, Skip: "button press without a readable message or data"}
	}
	in := pipeline.Inbound{
		Channel:     Channel,
		Account:     bot.Account(),
		ChatID:      strconv.FormatInt(m.Chat.ID, 10),
		ChatType:    pipeline.ChatGroup,
		MessageID:   "cb-" + q.ID,
		SenderID:    strconv.FormatInt(q.From.ID, 10),
		SenderName:  displayName(q.From),
		SenderIsBot: q.From.IsBot,
		ReplyTo:     strconv.Itoa(m.ID),
		ReplyToBot:  true,
		Action:      q.Data,
		ReceivedAt:  now.UTC(),
	}
	if m.Chat.Type == models.ChatTypePrivate {
		in.ChatType = pipeline.ChatDirect
	}
	if m.MessageThreadID != 0 && (m.IsTopicMessage || m.Chat.IsForum) {
		in.ThreadID = topicPrefix + strconv.Itoa(m.MessageThreadID)
	}
	return Event{Inbound: &in, CallbackID: q.ID}
}

func reactionEvent(bot Identity, updateID int64, r *models.MessageReactionUpdated, now time.Time) Event {
	if r.User == nil {
		return Event{Skip: "anonymous reaction"}
	}
	if r.User.ID == bot.ID {
		return Event{Skip: "the bot's own reaction"}
	}
	f := pipeline.Feedback{
		Channel:   Channel,
		Account:   bot.Account(),
		ChatID:    strconv.FormatInt(r.Chat.ID, 10),
		EventID:   fmt.Sprintf("tg-%d-%d", bot.ID, updateID),
		MessageID: strconv.Itoa(r.MessageID),
		SenderID:  strconv.FormatInt(r.User.ID, 10),
		At:        now.UTC(),
	}
	if r.Date > 0 {
		f.At = time.Unix(int64(r.Date), 0).UTC()
	}
	for _, t := range r.NewReaction {
		switch {
		case t.ReactionTypeEmoji != nil:
			f.Emoji = append(f.Emoji, t.ReactionTypeEmoji.Emoji)
		case t.ReactionTypeCustomEmoji != nil:
			f.Emoji = append(f.Emoji, "custom-"+t.ReactionTypeCustomEmoji.CustomEmojiID)
		case t.ReactionTypePaid != nil:
			f.Emoji = append(f.Emoji, "⭐")
		}
	}
	return Event{Feedback: &f}
}
