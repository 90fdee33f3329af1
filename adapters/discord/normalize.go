package discord

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Place is where a Discord channel sits: its guild ("" for a DM) and, for
// a thread, the channel the thread belongs to. A channel's place never
// changes, so it is looked up once (see places.go).
type Place struct {
	ChannelID string
	GuildID   string
	// ParentID is a thread's channel; "" for anything but a thread.
	ParentID string
	// Direct: a DM between one person and the bot.
	Direct bool
}

// Chat is the session's chat: the thread's channel for a thread, else
// the channel itself.
func (p Place) Chat() string {
	if p.ParentID != "" {
		return p.ParentID
	}
	return p.ChannelID
}

// ThreadID is the lane inside the session: the thread's own channel ID
// for a thread (where replies go), "" for the channel's root.
func (p Place) ThreadID() string {
	if p.ParentID != "" {
		return p.ChannelID
	}
	return ""
}

// Event is what one gateway event becomes: a message for the session, a
// feedback event, or nothing (Skip says why).
type Event struct {
	Inbound  *pipeline.Inbound
	Feedback *pipeline.Feedback
	Skip     string
}

// NormalizeMessage turns one message (from MESSAGE_CREATE or the REST
// history, which lacks guild_id: place says where it is) into an Event.
// It never fails on content: what it cannot use is skipped with a
// reason, and every Inbound it returns is valid.
func NormalizeMessage(botID string, m *discordgo.Message, place Place, now time.Time) Event {
	switch {
	case m == nil || m.Author == nil:
		return Event{Skip: "message without an author"}
	case m.Author.ID == botID:
		return Event{Skip: "the bot's own message"}
	case m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply:
		return Event{Skip: "not someone's message (system message type " + strconv.Itoa(int(m.Type)) + ")"}
	}
	text, us, others := addressing(botID, m.Content)
	in := pipeline.Inbound{
		Channel:        Channel,
		Account:        botID,
		ChatID:         place.Chat(),
		ChatType:       pipeline.ChatGroup,
		MessageID:      m.ID,
		SenderID:       m.Author.ID,
		SenderName:     pipeline.ClipName(senderName(m.Author, m.Member)),
		SenderIsBot:    m.Author.Bot || m.WebhookID != "",
		Text:           pipeline.ClipText(text),
		Media:          mediaOf(m.Attachments),
		MentionsBot:    us,
		MentionsOthers: others && !us,
		ThreadID:       place.ThreadID(),
		ReceivedAt:     adapters.ReceivedAt(now, m.Timestamp),
	}
	if place.Direct {
		in.ChatType = pipeline.ChatDirect
	}
	// A reply (not a forward, which references another channel's message)
	// answers the message it quotes; it is addressed to the bot when that
	// is the bot's.
	if ref := m.MessageReference; ref != nil && ref.MessageID != "" && m.Type == discordgo.MessageTypeReply {
		in.ReplyTo = ref.MessageID
		in.ReplyToBot = m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == botID
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 {
		if m.Content == "" && len(m.Embeds) == 0 && len(m.StickerItems) == 0 && !place.Direct {
			return Event{Skip: "message without content or attachments (without the Message Content Intent a guild message arrives empty)"}
		}
		return Event{Skip: "message without text or attachments"}
	}
	if err := in.Validate(); err != nil {
		return Event{Skip: "invalid message: " + err.Error()}
	}
	return Event{Inbound: &in}
}

var userMention = regexp.MustCompile(`<@!?(\d+)>`)

// addressing strips the bot's mentions (<@id> and the legacy <@!id>) from
// the text, so "<@B> /status" reaches the command parser as "/status",
// and says whether the bot or only others were mentioned. Role mentions
// (<@&id>) count as neither: a bot is also mentioned through its managed
// role, which this cannot tell from another role.
func addressing(botID, text string) (clean string, us, others bool) {
	var out strings.Builder
	last := 0
	for _, loc := range userMention.FindAllStringSubmatchIndex(text, -1) {
		id := text[loc[2]:loc[3]]
		if id != botID {
			others = true
			continue
		}
		us = true
		out.WriteString(text[last:loc[0]])
		last = loc[1]
		if strings.HasPrefix(text[last:], " ") {
			last++
		}
	}
	out.WriteString(text[last:])
	return strings.TrimSpace(out.String()), us, others
}

func senderName(u *discordgo.User, member *discordgo.Member) string {
	switch {
	case member != nil && member.Nick != "":
		return member.Nick
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}

// mediaOf keeps references to a message's attachments: their CDN URL (a
// tool fetches it; Discord signs these URLs and they expire after about a
// day), file name and type, never the bytes.
func mediaOf(files []*discordgo.MessageAttachment) []pipeline.Media {
	var out []pipeline.Media
	for _, f := range files {
		if f == nil || len(out) == pipeline.MaxMedia {
			continue
		}
		ref := f.URL
		if ref == "" {
			ref = f.ID
		}
		if ref == "" {
			continue
		}
		out = append(out, pipeline.Media{Kind: pipeline.MediaKindOf(f.ContentType), Ref: ref, MimeType: f.ContentType, Name: pipeline.ClipFileName(f.Filename)})
	}
	return out
}

// Reaction is MESSAGE_REACTION_ADD as the gateway sends it, with the
// reacted message's author, which discordgo's type leaves out.
type Reaction struct {
	UserID          string          `json:"user_id"`
	ChannelID       string          `json:"channel_id"`
	MessageID       string          `json:"message_id"`
	GuildID         string          `json:"guild_id"`
	MessageAuthorID string          `json:"message_author_id"`
	Emoji           discordgo.Emoji `json:"emoji"`
}

// NormalizeReaction turns a reaction on one of the bot's messages into
// Feedback. Reactions on anyone else's message are skipped (in a busy
// guild they would signal the session for nothing), as are the bot's
// own.
func NormalizeReaction(botID string, r Reaction, place Place, now time.Time) Event {
	emoji := r.Emoji.Name
	if r.Emoji.ID != "" {
		emoji += ":" + r.Emoji.ID // a custom emoji, as reactions name it
	}
	switch {
	case r.UserID == botID:
		return Event{Skip: "the bot's own reaction"}
	case r.MessageAuthorID != "" && r.MessageAuthorID != botID:
		return Event{Skip: "reaction on someone else's message"}
	case emoji == "":
		return Event{Skip: "reaction without an emoji"}
	}
	f := pipeline.Feedback{
		Channel: Channel,
		Account: botID,
		ChatID:  place.Chat(),
		// Discord gives reactions no ID: a user's emoji on a message is
		// one event, so a replay (RESUME) is stored once; adding the same
		// emoji again after removing it is not a second event.
		EventID:   "rx-" + r.MessageID + "-" + r.UserID + "-" + emojiKey(r.Emoji),
		MessageID: r.MessageID,
		SenderID:  r.UserID,
		Emoji:     []string{emoji},
		At:        now.UTC(),
	}
	if err := f.Validate(); err != nil {
		return Event{Skip: "invalid reaction: " + err.Error()}
	}
	return Event{Feedback: &f}
}

// emojiKey names an emoji within an ID: a custom emoji by its ID, a
// Unicode one by its code points in hex (IDs allow no emoji).
func emojiKey(e discordgo.Emoji) string {
	if e.ID != "" {
		return e.ID
	}
	var b strings.Builder
	for _, r := range e.Name {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.FormatInt(int64(r), 16))
	}
	return b.String()
}
