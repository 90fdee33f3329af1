package discordtest

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Guild is a server the bot is in.
type Guild struct {
	ID, Name string
	Members  int // approximate_member_count, the bot included
}

// ChannelType is Discord's channel type.
type ChannelType int

// The channel types the fake knows.
const (
	GuildText     ChannelType = 0
	DM            ChannelType = 1
	PublicThread  ChannelType = 11
	PrivateThread ChannelType = 12
)

// Channel is a guild text channel, a DM, or a thread in a guild channel.
type Channel struct {
	ID       string
	Type     ChannelType
	GuildID  string // "" for a DM
	ParentID string // a thread's channel
	Name     string
	// Recipient is a DM's other user.
	Recipient string
}

// Thread says whether the channel is a thread.
func (c Channel) Thread() bool { return c.Type == PublicThread || c.Type == PrivateThread }

// User is a Discord user.
type User struct {
	ID, Name string
	Bot      bool
}

// Attachment is a file attached to a user's message.
type Attachment struct {
	ID, Filename, ContentType string
	Size                      int
	// DurationSecs and Waveform are a voice message's: its length and
	// its base64 waveform, as Discord's client records them.
	DurationSecs float64
	Waveform     string
	// Data is the file's content: the bot's uploads', and a user's
	// post's where the test gives it (the CDN route serves it).
	Data []byte
}

// URL is where Discord's CDN would serve the attachment.
func (a Attachment) URL(channel string) string {
	return "https://cdn.discordapp.com/attachments/" + channel + "/" + a.ID + "/" + a.Filename
}

// Message is a message in a channel, a user's or the bot's, as it is now.
type Message struct {
	ID, ChannelID, GuildID string
	Author                 User
	Content                string
	Type                   int // 0, or 19 for a reply
	Timestamp              time.Time
	Edits                  int
	// Reply is the message_reference's message when the reply was kept;
	// "" for a plain message and a soft reply to a missing message.
	Reply string
	// Nonce and EnforceNonce are as sent (a numeric nonce as its digits).
	Nonce        string
	EnforceNonce bool
	// AllowedMentions as sent, nil when absent; Pings are who Discord
	// would notify, from the content, the reply and AllowedMentions.
	AllowedMentions *AllowedMentions
	Pings           Pings
	Mentions        []string // user IDs mentioned in the content
	Components      json.RawMessage
	Buttons         []Button // Components' buttons, in order
	Embeds          json.RawMessage
	Flags           int
	Attachments     []Attachment
	// Interaction is the interaction this message answers (type 4), if
	// any.
	Interaction string
	// Reactions are the bot's reactions on the message now, in the order
	// it added them, as sent (emoji, or name:id).
	Reactions []string
	Deleted   bool
}

// AllowedMentions is the allowed_mentions a message was sent with.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users"`
	Roles       []string `json:"roles"`
	RepliedUser bool     `json:"replied_user"`
}

// Pings are the notifications a message causes.
type Pings struct {
	Everyone     bool // @everyone or @here
	Users, Roles []string
}

// None says whether nobody is notified.
func (p Pings) None() bool { return !p.Everyone && len(p.Users) == 0 && len(p.Roles) == 0 }

// Button is a button of a message's components.
type Button struct {
	CustomID, Label, URL string
	Style                int
	Disabled             bool
}

type reaction struct{ emoji, user string }

type channelState struct {
	ch   Channel
	msgs []*message // by ID, oldest first
}

type message struct {
	Message
	reactions []reaction // everyone's, in order
	wire      obj        // Post.Wire
}

type typingCall struct {
	channel string
	at      time.Time
}

// AddGuild makes a guild known; channels naming it belong to it.
func (s *Server) AddGuild(g Guild) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.Name == "" {
		g.Name = "guild-" + g.ID
	}
	s.guilds[g.ID] = &g
	s.touch()
}

// AddChannel makes a channel known (and its guild, with 2 members, if
// unknown); routes on unknown channels answer 10003 Unknown Channel.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.GuildID != "" && s.guilds[c.GuildID] == nil {
		s.guilds[c.GuildID] = &Guild{ID: c.GuildID, Name: "guild-" + c.GuildID, Members: 2}
	}
	if c.Name == "" && c.Type != DM {
		c.Name = "channel-" + c.ID
	}
	if st := s.channels[c.ID]; st != nil {
		st.ch = c
	} else {
		s.channels[c.ID] = &channelState{ch: c}
	}
	s.touch()
}

// AddUser makes a user known by name (and as a bot or not); authors the
// fake has not met are users named "user-<id>".
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// user returns a known user or makes one up; s.mu must be held.
func (s *Server) user(id string) User {
	if u, ok := s.users[id]; ok {
		return u
	}
	return User{ID: id, Name: "user-" + id}
}

// Messages are the channel's messages, of everyone, oldest first, the
// deleted left out.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	if st := s.channels[channel]; st != nil {
		for _, m := range st.msgs {
			if !m.Deleted {
				out = append(out, m.copy())
			}
		}
	}
	return out
}

// Sent are the bot's messages in the channel, oldest first.
func (s *Server) Sent(channel string) []Message {
	var out []Message
	for _, m := range s.Messages(channel) {
		if m.Author.ID == s.BotID {
			out = append(out, m)
		}
	}
	return out
}

// Message is one message as it is now (deleted ones too).
func (s *Server) Message(channel, id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.findMessage(channel, id); m != nil {
		return m.copy(), true
	}
	return Message{}, false
}

// Reactions are the bot's reactions on a message now, in order.
func (s *Server) Reactions(channel, id string) []string {
	m, _ := s.Message(channel, id)
	return m.Reactions
}

// Typing are the times the bot said it was typing in the channel.
func (s *Server) Typing(channel string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, t := range s.typing {
		if t.channel == channel {
			out = append(out, t.at)
		}
	}
	return out
}

// findMessage is a stored message, deleted or not; s.mu must be held.
func (s *Server) findMessage(channel, id string) *message {
	st := s.channels[channel]
	if st == nil {
		return nil
	}
	for _, m := range st.msgs {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// store adds m to its channel in ID order; s.mu must be held.
func (s *Server) store(st *channelState, m *message) {
	i, _ := slices.BinarySearchFunc(st.msgs, m.ID, func(x *message, id string) int { return cmpSnowflake(x.ID, id) })
	st.msgs = slices.Insert(st.msgs, i, m)
	s.touch()
}

func (m *message) copy() Message {
	c := m.Message
	c.Reactions = slices.Clone(m.Reactions)
	c.Mentions = slices.Clone(m.Mentions)
	c.Buttons = slices.Clone(m.Buttons)
	c.Attachments = slices.Clone(m.Attachments)
	return c
}

// snowflake is a new ID for the time: milliseconds since Discord's epoch
// above 22 bits of worker and increment, rising strictly for IDs made
// now, so history's before and after compare them as Discord does.
// s.mu must be held.
func (s *Server) snowflake(at time.Time) string {
	id := uint64(max(at.UnixMilli()-discordEpochMillis, 0))<<22 | 1<<17
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatUint(id, 10)
}

// cmpSnowflake orders numeric IDs; a non-numeric ID sorts first.
func cmpSnowflake(a, b string) int {
	x, _ := strconv.ParseUint(a, 10, 64)
	y, _ := strconv.ParseUint(b, 10, 64)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// SnowflakeAt is the smallest ID of a message made at t; history's
// after=SnowflakeAt(t) answers the messages since t.
func SnowflakeAt(t time.Time) string {
	return strconv.FormatUint(uint64(max(t.UnixMilli()-discordEpochMillis, 0))<<22, 10)
}
