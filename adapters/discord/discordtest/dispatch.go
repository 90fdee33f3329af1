package discordtest

import (
	"encoding/json"
	"slices"
)

// The gateway intents that decide who receives a dispatch.
const (
	intentGuilds          = 1 << 0
	intentGuildMessages   = 1 << 9
	intentGuildReactions  = 1 << 10
	intentDirectMessages  = 1 << 12
	intentDirectReactions = 1 << 13
)

// dispatchTo numbers a dispatch in the session, keeps it for replays,
// and sends it unless no connection (or a zombie) carries the session.
// s.mu must be held.
func (s *Server) dispatchTo(sess *gwSession, t string, d any) {
	sess.seq++
	data, _ := json.Marshal(obj{"op": 0, "s": sess.seq, "t": t, "d": d})
	sess.log = append(sess.log, logged{seq: sess.seq, frame: data})
	if c := sess.conn; c != nil && !c.zombie {
		c.send(frame{data: data})
	}
}

// emit dispatches to every live session whose intents include intent
// (0: all), built for the session's MESSAGE_CONTENT grant, whether or not
// a connection carries it now: a session resumed later gets it then.
// s.mu must be held.
func (s *Server) emit(t string, intent uint64, build func(content bool) any) {
	for _, sess := range s.gw.sessions {
		if sess.invalid || (intent != 0 && sess.intents&intent == 0) {
			continue
		}
		s.dispatchTo(sess, t, build(sess.intents&messageContentBit != 0))
	}
}

func (s *Server) emitMessage(t string, m *message) {
	intent := uint64(intentGuildMessages)
	if m.GuildID == "" {
		intent = intentDirectMessages
	}
	s.emit(t, intent, func(content bool) any { return s.wireEvent(m, content) })
}

func (s *Server) emitReaction(t string, m *message, user, emoji string) {
	intent := uint64(intentGuildReactions)
	if m.GuildID == "" {
		intent = intentDirectReactions
	}
	d := obj{"user_id": user, "channel_id": m.ChannelID, "message_id": m.ID, "emoji": wireEmoji(emoji), "burst": false, "type": 0}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	if t == "MESSAGE_REACTION_ADD" {
		d["message_author_id"] = m.Author.ID
		if m.GuildID != "" {
			d["member"] = s.wireMember(s.user(user), true, "0")
		}
	}
	s.emit(t, intent, func(bool) any { return d })
}

// DropConnections cuts every gateway connection without a close frame,
// as a lost network does; the sessions stay resumable, and what is
// dispatched meanwhile is replayed on RESUME.
func (s *Server) DropConnections() { s.closeGateway() }

// Zombify turns every open connection into a zombie: it stays open but
// answers no heartbeat and carries no dispatch (they wait in the session
// for a RESUME). Connections opened later are healthy. discordgo notices
// after 5 heartbeat intervals without an ACK, closes with 1000 — which
// ends the session on Discord, so its RESUME gets op 9 and it identifies
// afresh.
func (s *Server) Zombify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.gw.conns {
		c.zombie = true
	}
}

// InvalidateSessions ends every session: the next RESUME gets op 9
// (invalid session, not resumable) and must IDENTIFY again, as after a
// long outage.
func (s *Server) InvalidateSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.gw.sessions {
		sess.invalid = true
	}
}

// RefuseConnections makes the gateway refuse new connections (503 on the
// upgrade) while refuse is true, as during an outage: with
// DropConnections, what is posted meanwhile can only reach the client by
// a RESUME or, after a fresh IDENTIFY, by the REST history.
func (s *Server) RefuseConnections(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.refuse = refuse
}

// RefuseIdentifies closes every IDENTIFY from now on with code and
// Discord's reason for it, as Discord answers one it will not take: 4004
// a token reset since, 4010 or 4011 a shard, 4012 an API version, 4013
// or 4014 the intents (4014 once the Message Content Intent is switched
// off in the Developer Portal; DenyMessageContent is that from the
// start). A RESUME is not refused by it: with InvalidateSessions, it gets
// op 9 and the IDENTIFY that follows is closed. 0 takes them again.
func (s *Server) RefuseIdentifies(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.refuseIdentify = code
}

// CloseConnections ends every connection with a close frame of code
// (4000 "Unknown error." is Discord's "try reconnecting"); the sessions
// stay resumable, InvalidateSessions ends them too.
func (s *Server) CloseConnections(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.gw.conns {
		c.send(frame{closeCode: code, closeText: closeText(code)})
	}
}

// Reconnect sends op 7 on every connection: Discord asks the client to
// reconnect and resume.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.gw.conns {
		c.sendJSON(obj{"op": 7, "s": nil, "t": nil, "d": nil})
	}
}

// Connections counts the open connections that carry a session (after
// READY or RESUMED): those that receive dispatches.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.gw.conns {
		if c.session != nil && c.session.conn == c {
			n++
		}
	}
	return n
}

// Opened counts the gateway connections ever opened.
func (s *Server) Opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gw.opened
}

// Identifies are the IDENTIFYs received, in order.
func (s *Server) Identifies() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gw.identifies)
}

// Resumes are the RESUMEs received, in order.
func (s *Server) Resumes() []Resume {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gw.resumes)
}

// Heartbeats counts the heartbeats received, answered or not.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gw.heartbeats
}

// Post is a message a user (or another bot, see AddUser) writes.
type Post struct {
	Channel string
	Author  string // a user ID
	Content string
	// ReplyTo is a message in the channel this one replies to; the
	// replied-to author is mentioned, as Discord's client does by default.
	ReplyTo     string
	Attachments []Attachment
	// Flags are the message's flags, such as FlagVoiceMessage.
	Flags int
	// Components are the message's components as sent (a bot's or an
	// app's message has them), of any type, known or not.
	Components json.RawMessage
	// Wire sets keys of the message as the gateway and the history send
	// it, over those the fake builds: a field a client may fail to read.
	Wire map[string]any
}

// FlagVoiceMessage (IS_VOICE_MESSAGE) marks a voice message: recorded in
// Discord's client, no content, one audio/ogg attachment,
// voice-message.ogg, with its duration and waveform.
const FlagVoiceMessage = 1 << 13

// Post stores a user's message in its channel (so history returns it)
// and dispatches MESSAGE_CREATE to the live sessions; with no gateway
// connected it is stored all the same, as a message written while the
// bot was away. It panics on an unknown channel or reply.
func (s *Server) Post(p Post) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.channels[p.Channel]
	if st == nil {
		panic("discordtest: Post to unknown channel " + p.Channel + "; AddChannel it first")
	}
	m := &message{Message: Message{ChannelID: st.ch.ID, GuildID: st.ch.GuildID, Author: s.user(p.Author),
		Content: p.Content, Attachments: slices.Clone(p.Attachments), Flags: p.Flags, Components: slices.Clone(p.Components)},
		wire: p.Wire}
	m.Mentions = mentionsIn(p.Content)
	replied := ""
	if p.ReplyTo != "" {
		parent := s.findMessage(st.ch.ID, p.ReplyTo)
		if parent == nil {
			panic("discordtest: Post replies to unknown message " + p.ReplyTo)
		}
		m.Reply, m.Type, replied = parent.ID, 19, parent.Author.ID
		if !slices.Contains(m.Mentions, replied) {
			m.Mentions = append(m.Mentions, replied)
		}
	}
	m.Pings = pings(p.Content, nil, replied)
	for i := range m.Attachments {
		if m.Attachments[i].ID == "" {
			m.Attachments[i].ID = s.snowflake(s.Now())
		}
	}
	s.create(st, m)
	return m.copy()
}

// React adds a user's reaction (emoji, or name:id) to a message and
// dispatches MESSAGE_REACTION_ADD. It panics on an unknown message.
func (s *Server) React(channel, messageID, user, emoji string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findMessage(channel, messageID)
	if m == nil {
		panic("discordtest: React to unknown message " + channel + "/" + messageID)
	}
	s.addReaction(m, user, emoji)
}

// Delete deletes a message (as its author or a moderator would) and
// dispatches MESSAGE_DELETE; replies to it keep a dangling reference.
func (s *Server) Delete(channel, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findMessage(channel, messageID)
	if m == nil || m.Deleted {
		return
	}
	m.Deleted = true
	s.touch()
	d := obj{"id": m.ID, "channel_id": m.ChannelID}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	intent := uint64(intentGuildMessages)
	if m.GuildID == "" {
		intent = intentDirectMessages
	}
	s.emit("MESSAGE_DELETE", intent, func(bool) any { return d })
}
