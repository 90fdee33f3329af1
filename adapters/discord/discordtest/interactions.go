package discordtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Press is a user's click on a button of a message.
type Press struct {
	Channel, Message, User, CustomID string
	// Permissions are the presser's permissions in the guild (the
	// member.permissions bit set); 0 by default.
	Permissions int64
}

// Interaction names an interaction the fake dispatched.
type Interaction struct{ ID, Token string }

// InteractionResponse is an interaction callback the fake accepted.
type InteractionResponse struct {
	Interaction string
	// Type is the callback type: 4 a message (Flags 64: ephemeral), 5 a
	// deferred message, 6 a deferred update, 7 an update of the message.
	Type       int
	Content    string
	Flags      int
	Components json.RawMessage
	At         time.Time
}

// Ephemeral is a message only the presser sees: a callback or follow-up
// with flags 64.
type Ephemeral struct {
	ID, Interaction, Channel, User string
	Content                        string
	Components                     json.RawMessage
	Edits                          int
}

type interactionState struct {
	id, token             string
	channel, message      string // the message whose button was pressed
	user                  string
	created               time.Time
	responded             bool
	original              string // the original response's message or ephemeral ID
	ephemeralOriginal     bool
	followups, ephemerals []string
}

// Press dispatches INTERACTION_CREATE for a button click (component type
// 2, with custom_id, the member or user, the message, the guild and the
// channel) to every live session, and returns the interaction for its
// callback. The message need not show the button: a stale client can
// press one already removed. It panics on an unknown message.
func (s *Server) Press(p Press) Interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findMessage(p.Channel, p.Message)
	if m == nil {
		panic("discordtest: Press on unknown message " + p.Channel + "/" + p.Message)
	}
	now := s.Now()
	it := &interactionState{id: s.snowflake(now), channel: p.Channel, message: p.Message, user: p.User, created: now}
	it.token = "itoken-" + it.id
	s.interactions[it.id] = it
	ch := s.channels[p.Channel].ch
	d := obj{"id": it.id, "application_id": s.ApplicationID, "type": 3, "token": it.token, "version": 1,
		"data":    obj{"custom_id": p.CustomID, "component_type": 2},
		"channel": s.wireChannel(ch), "channel_id": ch.ID, "message": s.wireMessage(m, true),
		"app_permissions": "2248473465835073", "locale": "en-US", "entitlements": []any{}}
	perms := strconv.FormatInt(p.Permissions, 10)
	if ch.GuildID != "" {
		d["guild_id"], d["guild_locale"], d["context"] = ch.GuildID, "en-US", 0
		d["member"] = s.wireMember(s.user(p.User), true, perms)
		d["authorizing_integration_owners"] = obj{"0": ch.GuildID}
	} else {
		d["user"], d["context"] = wireUser(s.user(p.User)), 1
		d["authorizing_integration_owners"] = obj{"1": p.User}
	}
	s.emit("INTERACTION_CREATE", 0, func(bool) any { return d })
	s.touch()
	return Interaction{ID: it.id, Token: it.token}
}

// Responses are the interaction callbacks accepted, of the given
// interactions or of all, in order.
func (s *Server) Responses(interactions ...string) []InteractionResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InteractionResponse
	for _, r := range s.responses {
		if len(interactions) == 0 || slices.Contains(interactions, r.Interaction) {
			out = append(out, r)
		}
	}
	return out
}

// Ephemerals are the ephemeral messages shown in a channel, in order, as
// they are now.
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

func (s *Server) callback(r *request) (int, any) {
	it := s.interactions[r.Vars["interaction"]]
	if it == nil || it.token != r.Vars["token"] || r.At.Sub(it.created) > s.InteractionDeadline {
		return apiError(http.StatusNotFound, 10062, "Unknown interaction")
	}
	if it.responded {
		return apiError(http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
	}
	var body struct {
		Type int     `json:"type"`
		Data payload `json:"data"`
	}
	if json.Unmarshal(r.Raw, &body) != nil {
		return invalidJSON()
	}
	flags := 0
	if body.Data.Flags != nil {
		flags = *body.Data.Flags
	}
	switch body.Type {
	case 4:
		if status, resp := s.answerWith(it, body.Data, &it.original, &it.ephemeralOriginal); status != 0 {
			return status, resp
		}
	case 5:
		// A "thinking" state whose message a follow-up edit of
		// @original would fill; recorded only.
	case 6:
		it.original = it.message
	case 7:
		m := s.findMessage(it.channel, it.message)
		if m == nil || m.Deleted {
			return apiError(http.StatusNotFound, 10008, "Unknown Message")
		}
		if status, resp := s.compose(m, body.Data, false); status != 0 {
			return status, resp
		}
		m.Edits++
		s.emitMessage("MESSAGE_UPDATE", m)
		it.original = it.message
	default:
		return formError("type", "INTERACTION_RESPONSE_TYPE_INVALID", "Invalid interaction response type.")
	}
	it.responded = true
	content := ""
	if body.Data.Content != nil {
		content = *body.Data.Content
	}
	s.responses = append(s.responses, InteractionResponse{Interaction: it.id, Type: body.Type, Content: content,
		Flags: flags, Components: body.Data.Components, At: r.At})
	return http.StatusNoContent, nil
}

// answerWith creates the message (or, with flags 64, the ephemeral) an
// interaction answers with, and sets *id to it. s.mu must be held.
func (s *Server) answerWith(it *interactionState, p payload, id *string, ephemeral *bool) (int, any) {
	m := &message{Message: Message{ChannelID: it.channel, GuildID: s.channels[it.channel].ch.GuildID,
		Author: s.user(s.BotID), Interaction: it.id}}
	if status, resp := s.compose(m, p, true); status != 0 {
		return status, resp
	}
	if m.Flags&64 != 0 {
		e := Ephemeral{ID: s.snowflake(s.Now()), Interaction: it.id, Channel: it.channel, User: it.user,
			Content: m.Content, Components: m.Components}
		s.ephemera = append(s.ephemera, e)
		*id, *ephemeral = e.ID, true
		s.touch()
		return 0, nil
	}
	s.create(s.channels[it.channel], m)
	*id = m.ID
	return 0, nil
}

// byWebhook finds the interaction a webhook route names, or answers
// 10015 Unknown Webhook (also before the interaction was answered and
// after 15 minutes). s.mu must be held.
func (s *Server) byWebhook(r *request) (*interactionState, int, any) {
	for _, it := range s.interactions {
		if it.token == r.Vars["token"] && r.Vars["application"] == s.ApplicationID &&
			it.responded && r.At.Sub(it.created) <= webhookLifetime {
			return it, 0, nil
		}
	}
	status, resp := apiError(http.StatusNotFound, 10015, "Unknown Webhook")
	return nil, status, resp
}

func (s *Server) followup(r *request) (int, any) {
	it, status, resp := s.byWebhook(r)
	if it == nil {
		return status, resp
	}
	p, ok := decodePayload(r)
	if !ok {
		return invalidJSON()
	}
	var id string
	var ephemeral bool
	if status, resp := s.answerWith(it, p, &id, &ephemeral); status != 0 {
		return status, resp
	}
	if ephemeral {
		it.ephemerals = append(it.ephemerals, id)
	} else {
		it.followups = append(it.followups, id)
	}
	if v := r.Query.Get("wait"); v != "true" && v != "1" {
		return http.StatusNoContent, nil
	}
	if ephemeral {
		e := s.ephemera[len(s.ephemera)-1]
		return http.StatusOK, obj{"id": e.ID, "channel_id": e.Channel, "content": e.Content, "flags": 64,
			"author": wireUser(s.user(s.BotID)), "type": 0, "timestamp": r.At.UTC().Format(timeLayout)}
	}
	return http.StatusOK, s.wireMessage(s.findMessage(it.channel, id), true)
}

// webhookEdit edits @original (the answer, or the pressed message after
// a type 6 or 7 callback) or a follow-up.
func (s *Server) webhookEdit(r *request) (int, any) {
	it, status, resp := s.byWebhook(r)
	if it == nil {
		return status, resp
	}
	id, ephemeral := r.Vars["message"], slices.Contains(it.ephemerals, r.Vars["message"])
	if id == "@original" {
		id, ephemeral = it.original, it.ephemeralOriginal
	} else if !ephemeral && !slices.Contains(it.followups, id) {
		id = ""
	}
	if id == "" {
		return apiError(http.StatusNotFound, 10008, "Unknown Message")
	}
	if !ephemeral {
		m := s.findMessage(it.channel, id)
		if m == nil || m.Deleted {
			return apiError(http.StatusNotFound, 10008, "Unknown Message")
		}
		return s.editMessage(m, r)
	}
	i := slices.IndexFunc(s.ephemera, func(e Ephemeral) bool { return e.ID == id })
	p, ok := decodePayload(r)
	if !ok {
		return invalidJSON()
	}
	scratch := &message{Message: Message{Content: s.ephemera[i].Content, Components: s.ephemera[i].Components}}
	if status, resp := s.compose(scratch, p, false); status != 0 {
		return status, resp
	}
	e := &s.ephemera[i]
	e.Content, e.Components = scratch.Content, scratch.Components
	e.Edits++
	s.touch()
	return http.StatusOK, obj{"id": e.ID, "channel_id": e.Channel, "content": e.Content, "flags": 64,
		"author": wireUser(s.user(s.BotID)), "type": 0, "timestamp": r.At.UTC().Format(timeLayout)}
}
