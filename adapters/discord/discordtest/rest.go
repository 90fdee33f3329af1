package discordtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The REST routes; each runs with s.mu held and answers a status and a
// JSON body (nil for 204).

func (s *Server) gatewayURL(*request) (int, any) {
	return http.StatusOK, obj{"url": s.GatewayURL()}
}

func (s *Server) gatewayBot(*request) (int, any) {
	return http.StatusOK, obj{"url": s.GatewayURL(), "shards": 1, "session_start_limit": obj{
		"total": 1000, "remaining": 1000 - len(s.gw.identifies), "reset_after": 86_400_000, "max_concurrency": 1}}
}

func (s *Server) me(*request) (int, any) {
	u := wireUser(s.user(s.BotID))
	u["verified"], u["mfa_enabled"], u["flags"] = true, false, 0
	return http.StatusOK, u
}

func (s *Server) channel(r *request) (int, any) {
	st := s.channels[r.Vars["channel"]]
	if st == nil {
		return apiError(http.StatusNotFound, 10003, "Unknown Channel")
	}
	return http.StatusOK, s.wireChannel(st.ch)
}

func (s *Server) guild(r *request) (int, any) {
	g := s.guilds[r.Vars["guild"]]
	if g == nil {
		return apiError(http.StatusNotFound, 10004, "Unknown Guild")
	}
	w := obj{"id": g.ID, "name": g.Name, "owner_id": "1", "icon": nil, "roles": []any{}, "emojis": []any{},
		"features": []string{}, "verification_level": 0, "premium_tier": 0}
	if v := r.Query.Get("with_counts"); v == "true" || v == "1" {
		w["approximate_member_count"], w["approximate_presence_count"] = g.Members, g.Members
	}
	return http.StatusOK, w
}

// payload is a message body as create, edit, interaction callbacks and
// webhooks take it; a field sent as null arrives as "null".
type payload struct {
	Content          *string          `json:"content"`
	Nonce            json.RawMessage  `json:"nonce"`
	EnforceNonce     bool             `json:"enforce_nonce"`
	MessageReference *reference       `json:"message_reference"`
	AllowedMentions  *AllowedMentions `json:"allowed_mentions"`
	Components       json.RawMessage  `json:"components"`
	Embeds           json.RawMessage  `json:"embeds"`
	Flags            *int             `json:"flags"`
}

type reference struct {
	MessageID       string `json:"message_id"`
	ChannelID       string `json:"channel_id"`
	FailIfNotExists *bool  `json:"fail_if_not_exists"`
}

type nonceKey struct{ channel, nonce string }

type nonceEntry struct {
	id string
	at int64 // UnixNano
}

func decodePayload(r *request) (payload, bool) {
	var p payload
	if len(r.Raw) == 0 {
		return p, true
	}
	return p, json.Unmarshal(r.Raw, &p) == nil
}

// nonceText is a nonce as sent: a string's text or an integer's digits.
func nonceText(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

func invalidJSON() (int, any) {
	return apiError(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
}

func (s *Server) send(r *request) (int, any) {
	st := s.channels[r.Vars["channel"]]
	if st == nil {
		return apiError(http.StatusNotFound, 10003, "Unknown Channel")
	}
	p, ok := decodePayload(r)
	if !ok {
		return invalidJSON()
	}
	nonce := nonceText(p.Nonce)
	if utf8.RuneCountInString(nonce) > 25 {
		return formError("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
	m := &message{Message: Message{ChannelID: st.ch.ID, GuildID: st.ch.GuildID, Author: s.user(s.BotID),
		Nonce: nonce, EnforceNonce: p.EnforceNonce}}
	for _, f := range r.Files {
		f.ID = s.snowflake(s.Now())
		m.Attachments = append(m.Attachments, f)
	}
	if status, resp := s.composeWithFiles(m, p, len(r.Files) > 0); status != 0 {
		return status, resp
	}
	key := nonceKey{st.ch.ID, nonce}
	if e, seen := s.nonces[key]; seen && p.EnforceNonce && nonce != "" && r.At.UnixNano()-e.at < int64(s.NonceWindow) {
		if old := s.findMessage(st.ch.ID, e.id); old != nil {
			return http.StatusOK, s.wireMessage(old, true) // the message already created, not a second
		}
	}
	if ref := p.MessageReference; ref != nil {
		parent := s.findMessage(cmpOr(ref.ChannelID, st.ch.ID), ref.MessageID)
		switch {
		case parent != nil && !parent.Deleted:
			m.Reply, m.Type = parent.ID, 19
			m.Pings = pings(m.Content, m.AllowedMentions, parent.Author.ID)
		case ref.FailIfNotExists == nil || *ref.FailIfNotExists:
			return formError("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
		}
	}
	s.create(st, m)
	if nonce != "" {
		s.nonces[key] = nonceEntry{id: m.ID, at: r.At.UnixNano()}
	}
	return http.StatusOK, s.wireMessage(m, true)
}

// create stores a new message and dispatches it; s.mu must be held.
func (s *Server) create(st *channelState, m *message) {
	m.Timestamp = s.Now()
	m.ID = s.snowflake(m.Timestamp)
	s.store(st, m)
	s.emitMessage("MESSAGE_CREATE", m)
}

// compose applies a payload's content, components, embeds, mentions and
// flags to m, or answers Discord's error; creating asks for something to
// send. s.mu must be held.
func (s *Server) compose(m *message, p payload, creating bool) (int, any) {
	if p.Content != nil {
		if utf8.RuneCountInString(*p.Content) > 2000 {
			return formError("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
		}
		m.Content = *p.Content
	}
	if p.Components != nil {
		m.Components, m.Buttons = nil, nil
		if raw := string(p.Components); raw != "null" && raw != "[]" {
			bs, code := buttons(p.Components)
			if code != "" {
				return formError("components", code, "Invalid components.")
			}
			m.Components, m.Buttons = slices.Clone(p.Components), bs
		}
	}
	if p.Embeds != nil {
		m.Embeds = nil
		if raw := string(p.Embeds); raw != "null" && raw != "[]" {
			m.Embeds = slices.Clone(p.Embeds)
		}
	}
	if am := p.AllowedMentions; am != nil {
		if (slices.Contains(am.Parse, "users") && len(am.Users) > 0) || (slices.Contains(am.Parse, "roles") && len(am.Roles) > 0) {
			return formError("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", "parse and users or roles are mutually exclusive.")
		}
		m.AllowedMentions = am
	}
	if p.Flags != nil {
		m.Flags = *p.Flags
	}
	if creating && m.Content == "" && len(m.Embeds) == 0 && len(m.Components) == 0 {
		return apiError(http.StatusBadRequest, 50006, "Cannot send an empty message")
	}
	m.Mentions = mentionsIn(m.Content)
	m.Pings = pings(m.Content, m.AllowedMentions, "")
	return 0, nil
}

// history answers as GET /channels/{id}/messages does: newest first,
// limit 50 by default and 100 at most; with after, the oldest limit
// messages after it (still newest first), so a catch-up pages forward
// from the first ID of each page.
func (s *Server) history(r *request) (int, any) {
	st := s.channels[r.Vars["channel"]]
	if st == nil {
		return apiError(http.StatusNotFound, 10003, "Unknown Channel")
	}
	limit := 50
	if v := r.Query.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return formError("limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100.")
		}
		limit = n
	}
	for _, param := range []string{"before", "after", "around"} {
		if v := r.Query.Get(param); v != "" {
			if _, err := strconv.ParseUint(v, 10, 64); err != nil {
				return formError(param, "NUMBER_TYPE_COERCE", "Value \""+v+"\" is not snowflake.")
			}
		}
	}
	var live []*message
	for _, m := range st.msgs {
		if !m.Deleted {
			live = append(live, m)
		}
	}
	firstAbove := func(id string) int {
		i, found := slices.BinarySearchFunc(live, id, func(x *message, id string) int { return cmpSnowflake(x.ID, id) })
		if found {
			i++
		}
		return i
	}
	var page []*message
	switch q := r.Query; {
	case q.Get("around") != "":
		i, _ := slices.BinarySearchFunc(live, q.Get("around"), func(x *message, id string) int { return cmpSnowflake(x.ID, id) })
		from := max(i-limit/2, 0)
		page = live[from:min(from+limit, len(live))]
	case q.Get("before") != "":
		i, _ := slices.BinarySearchFunc(live, q.Get("before"), func(x *message, id string) int { return cmpSnowflake(x.ID, id) })
		page = live[max(i-limit, 0):i]
	case q.Get("after") != "":
		i := firstAbove(q.Get("after"))
		page = live[i:min(i+limit, len(live))]
	default:
		page = live[max(len(live)-limit, 0):]
	}
	out := []obj{}
	for i := len(page) - 1; i >= 0; i-- {
		out = append(out, s.wireMessage(page[i], !s.DenyMessageContent))
	}
	return http.StatusOK, out
}

func (s *Server) getMessage(r *request) (int, any) {
	m, status, resp := s.lookup(r)
	if m == nil {
		return status, resp
	}
	return http.StatusOK, s.wireMessage(m, !s.DenyMessageContent)
}

// lookup finds the route's channel and message or answers Discord's 404.
func (s *Server) lookup(r *request) (*message, int, any) {
	if s.channels[r.Vars["channel"]] == nil {
		status, resp := apiError(http.StatusNotFound, 10003, "Unknown Channel")
		return nil, status, resp
	}
	m := s.findMessage(r.Vars["channel"], r.Vars["message"])
	if m == nil || m.Deleted {
		status, resp := apiError(http.StatusNotFound, 10008, "Unknown Message")
		return nil, status, resp
	}
	return m, 0, nil
}

func (s *Server) edit(r *request) (int, any) {
	m, status, resp := s.lookup(r)
	if m == nil {
		return status, resp
	}
	if m.Author.ID != s.BotID {
		return apiError(http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
	}
	return s.editMessage(m, r)
}

// editMessage applies a PATCH body to m; s.mu must be held.
func (s *Server) editMessage(m *message, r *request) (int, any) {
	p, ok := decodePayload(r)
	if !ok {
		return invalidJSON()
	}
	if status, resp := s.compose(m, p, false); status != 0 {
		return status, resp
	}
	m.Edits++
	s.touch()
	s.emitMessage("MESSAGE_UPDATE", m)
	return http.StatusOK, s.wireMessage(m, true)
}

// validEmoji: a Unicode emoji (not plain ASCII: Slack's "eyes" is no
// emoji here) or a custom one as name:id.
func validEmoji(e string) bool {
	if name, id, ok := strings.Cut(e, ":"); ok {
		_, err := strconv.ParseUint(id, 10, 64)
		return name != "" && err == nil
	}
	for _, r := range e {
		if r > utf8.RuneSelf {
			return true
		}
	}
	return false
}

// reactionTarget is the message and emoji of a reaction route, or
// Discord's error.
func (s *Server) reactionTarget(r *request) (*message, string, int, any) {
	m, status, resp := s.lookup(r)
	if m == nil {
		return nil, "", status, resp
	}
	if emoji := r.Vars["emoji"]; validEmoji(emoji) {
		return m, emoji, 0, nil
	}
	status, resp = apiError(http.StatusBadRequest, 10014, "Unknown Emoji")
	return nil, "", status, resp
}

func (s *Server) react(r *request) (int, any) {
	m, emoji, status, resp := s.reactionTarget(r)
	if m == nil {
		return status, resp
	}
	if !slices.Contains(m.Reactions, emoji) { // a second PUT is a no-op, as on Discord
		s.addReaction(m, s.BotID, emoji)
	}
	return http.StatusNoContent, nil
}

func (s *Server) unreact(r *request) (int, any) {
	m, emoji, status, resp := s.reactionTarget(r)
	if m == nil {
		return status, resp
	}
	if i := slices.Index(m.Reactions, emoji); i >= 0 { // removing what is not there is a no-op too
		m.Reactions = slices.Delete(m.Reactions, i, i+1)
		m.reactions = slices.DeleteFunc(m.reactions, func(x reaction) bool { return x == reaction{emoji, s.BotID} })
		s.touch()
		s.emitReaction("MESSAGE_REACTION_REMOVE", m, s.BotID, emoji)
	}
	return http.StatusNoContent, nil
}

// addReaction records a reaction and dispatches it; s.mu must be held.
func (s *Server) addReaction(m *message, user, emoji string) {
	m.reactions = append(m.reactions, reaction{emoji, user})
	if user == s.BotID {
		m.Reactions = append(m.Reactions, emoji)
	}
	s.touch()
	s.emitReaction("MESSAGE_REACTION_ADD", m, user, emoji)
}

func (s *Server) startTyping(r *request) (int, any) {
	if s.channels[r.Vars["channel"]] == nil {
		return apiError(http.StatusNotFound, 10003, "Unknown Channel")
	}
	s.typing = append(s.typing, typingCall{channel: r.Vars["channel"], at: r.At})
	return http.StatusNoContent, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
