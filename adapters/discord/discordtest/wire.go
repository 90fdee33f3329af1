package discordtest

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// obj is a JSON object as Discord sends it.
type obj = map[string]any

const timeLayout = "2006-01-02T15:04:05.000000+00:00"

func wireUser(u User) obj {
	return obj{"id": u.ID, "username": u.Name, "global_name": u.Name, "discriminator": "0", "avatar": nil,
		"bot": u.Bot, "public_flags": 0}
}

// wireMember is a guild member as message events carry it (without the
// user) or interactions do (with it, and permissions as a string).
func (s *Server) wireMember(u User, withUser bool, permissions string) obj {
	m := obj{"roles": []string{}, "joined_at": s.Now().Add(-24 * time.Hour).UTC().Format(timeLayout),
		"deaf": false, "mute": false, "flags": 0, "pending": false, "nick": nil}
	if withUser {
		m["user"] = wireUser(u)
		m["permissions"] = permissions
	}
	return m
}

// contentVisible applies the MESSAGE_CONTENT rule: without the intent,
// content is empty except in DMs, the bot's own messages and those
// mentioning the bot. s.mu must be held.
func (s *Server) contentVisible(m *message, granted bool) bool {
	return granted || m.GuildID == "" || m.Author.ID == s.BotID || slices.Contains(m.Mentions, s.BotID)
}

// wireMessage is the message object; without content the privileged
// fields are empty, as Discord sends them. s.mu must be held.
func (s *Server) wireMessage(m *message, content bool) obj {
	w := obj{"id": m.ID, "channel_id": m.ChannelID, "author": wireUser(m.Author), "type": m.Type,
		"timestamp": m.Timestamp.UTC().Format(timeLayout), "edited_timestamp": nil, "tts": false,
		"mention_everyone": m.Pings.Everyone, "mention_roles": []string{}, "pinned": false, "flags": m.Flags,
		"content": "", "embeds": []any{}, "attachments": []any{}, "components": []any{}}
	var mentions []obj
	for _, id := range m.Mentions {
		mentions = append(mentions, wireUser(s.user(id)))
	}
	w["mentions"] = orEmpty(mentions)
	if m.Edits > 0 {
		w["edited_timestamp"] = m.Timestamp.Add(time.Duration(m.Edits) * time.Second).UTC().Format(timeLayout)
	}
	if m.Nonce != "" {
		w["nonce"] = m.Nonce
	}
	if m.Author.ID == s.BotID && m.Interaction != "" {
		w["webhook_id"] = s.ApplicationID
		w["application_id"] = s.ApplicationID
	}
	if s.contentVisible(m, content) {
		w["content"] = m.Content
		if len(m.Embeds) > 0 {
			w["embeds"] = m.Embeds
		}
		if len(m.Components) > 0 {
			w["components"] = m.Components
		}
		var files []obj
		for _, a := range m.Attachments {
			f := obj{"id": a.ID, "filename": a.Filename, "content_type": a.ContentType, "size": a.Size,
				"url": a.URL(m.ChannelID), "proxy_url": a.URL(m.ChannelID)}
			if a.Waveform != "" {
				f["duration_secs"], f["waveform"] = a.DurationSecs, a.Waveform
			}
			files = append(files, f)
		}
		w["attachments"] = orEmpty(files)
	}
	if m.Reply != "" {
		ref := obj{"type": 0, "message_id": m.Reply, "channel_id": m.ChannelID}
		if m.GuildID != "" {
			ref["guild_id"] = m.GuildID
		}
		w["message_reference"] = ref
		w["referenced_message"] = nil // deleted since
		if parent := s.findMessage(m.ChannelID, m.Reply); parent != nil && !parent.Deleted {
			w["referenced_message"] = s.wireMessage(parent, content)
		}
	}
	if reactions := s.wireReactions(m); len(reactions) > 0 {
		w["reactions"] = reactions
	}
	maps.Copy(w, m.wire)
	return w
}

func (s *Server) wireReactions(m *message) []obj {
	var out []obj
	index := map[string]obj{}
	for _, r := range m.reactions {
		e := index[r.emoji]
		if e == nil {
			e = obj{"emoji": wireEmoji(r.emoji), "count": 0, "me": false, "burst_colors": []string{}}
			index[r.emoji] = e
			out = append(out, e)
		}
		e["count"] = e["count"].(int) + 1
		if r.user == s.BotID {
			e["me"] = true
		}
	}
	return out
}

// wireEmoji is a reaction's emoji: Unicode by name, custom as name:id.
func wireEmoji(emoji string) obj {
	if name, id, ok := strings.Cut(emoji, ":"); ok {
		return obj{"id": id, "name": name}
	}
	return obj{"id": nil, "name": emoji}
}

// wireEvent is a message as MESSAGE_CREATE carries it: with guild_id and
// the author's member in guilds. s.mu must be held.
func (s *Server) wireEvent(m *message, content bool) obj {
	w := s.wireMessage(m, content)
	if m.GuildID != "" {
		w["guild_id"] = m.GuildID
		w["member"] = s.wireMember(m.Author, false, "")
	}
	return w
}

func (s *Server) wireChannel(c Channel) obj {
	w := obj{"id": c.ID, "type": int(c.Type), "flags": 0, "last_message_id": nil}
	if st := s.channels[c.ID]; st != nil && len(st.msgs) > 0 {
		w["last_message_id"] = st.msgs[len(st.msgs)-1].ID
	}
	if c.Type == DM {
		w["recipients"] = []obj{wireUser(s.user(c.Recipient))}
		return w
	}
	w["guild_id"], w["name"], w["parent_id"] = c.GuildID, c.Name, nil
	if c.ParentID != "" {
		w["parent_id"] = c.ParentID
	}
	if c.Thread() {
		w["owner_id"] = s.BotID
		w["message_count"], w["member_count"] = len(s.channels[c.ID].msgs), 2
		w["thread_metadata"] = obj{"archived": false, "auto_archive_duration": 1440, "locked": false,
			"archive_timestamp": s.Now().UTC().Format(timeLayout)}
	} else {
		w["position"], w["topic"], w["nsfw"], w["rate_limit_per_user"] = 0, nil, false, 0
	}
	return w
}

var (
	userMention = regexp.MustCompile(`<@!?(\d+)>`)
	roleMention = regexp.MustCompile(`<@&(\d+)>`)
)

// mentionsIn are the users mentioned in content, in order, once each.
func mentionsIn(content string) []string {
	var ids []string
	for _, m := range userMention.FindAllStringSubmatch(content, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// pings are whom Discord notifies for a message: without
// allowed_mentions everyone the content names and the replied-to author;
// with it, only what it allows. repliedTo is "" for no reply.
func pings(content string, am *AllowedMentions, repliedTo string) Pings {
	users := mentionsIn(content)
	var roles []string
	for _, m := range roleMention.FindAllStringSubmatch(content, -1) {
		roles = append(roles, m[1])
	}
	everyone := strings.Contains(content, "@everyone") || strings.Contains(content, "@here")
	var p Pings
	if am == nil {
		p = Pings{Everyone: everyone, Users: users, Roles: roles}
		if repliedTo != "" && !slices.Contains(p.Users, repliedTo) {
			p.Users = append(p.Users, repliedTo)
		}
		return p
	}
	p.Everyone = everyone && slices.Contains(am.Parse, "everyone")
	for _, u := range users {
		if slices.Contains(am.Parse, "users") || slices.Contains(am.Users, u) {
			p.Users = append(p.Users, u)
		}
	}
	for _, r := range roles {
		if slices.Contains(am.Parse, "roles") || slices.Contains(am.Roles, r) {
			p.Roles = append(p.Roles, r)
		}
	}
	if am.RepliedUser && repliedTo != "" && !slices.Contains(p.Users, repliedTo) {
		p.Users = append(p.Users, repliedTo)
	}
	return p
}

// buttons are the buttons in components (action rows of buttons), or
// Discord's form error when one is malformed.
func buttons(components json.RawMessage) ([]Button, string) {
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			Type     int    `json:"type"`
			Style    int    `json:"style"`
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
			URL      string `json:"url"`
			Disabled bool   `json:"disabled"`
		} `json:"components"`
	}
	if err := json.Unmarshal(components, &rows); err != nil {
		return nil, "MODEL_TYPE_CONVERT"
	}
	var out []Button
	for _, row := range rows {
		if row.Type != 1 || len(row.Components) == 0 || len(row.Components) > 5 {
			return nil, "COMPONENT_LAYOUT_WIDTH_EXCEEDED"
		}
		for _, c := range row.Components {
			if c.Type != 2 {
				continue // selects and the like: kept, not buttons
			}
			if (c.Style == 5) != (c.URL != "") || (c.Style != 5 && c.CustomID == "") {
				return nil, "COMPONENT_CUSTOM_ID_REQUIRED"
			}
			if len([]rune(c.CustomID)) > 100 {
				return nil, "BASE_TYPE_MAX_LENGTH"
			}
			out = append(out, Button{CustomID: c.CustomID, Label: c.Label, URL: c.URL, Style: c.Style, Disabled: c.Disabled})
		}
	}
	return out, ""
}

func orEmpty(list []obj) []obj {
	if list == nil {
		return []obj{}
	}
	return list
}
