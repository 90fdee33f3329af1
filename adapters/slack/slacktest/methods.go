package slacktest

import (
	"encoding/json"
	"slices"
	"strconv"
)

// dispatch runs one Web API method; s.mu must be held.
func (s *Server) dispatch(method string, p map[string]string) answer {
	switch method {
	case "auth.test":
		return answer{"url": "https://fake.slack.test/", "team": "fake", "user": "replyflow", "team_id": s.TeamID, "user_id": s.BotUserID, "bot_id": s.BotID}
	case "apps.connections.open":
		return answer{"url": s.openSocketURL()}
	case "chat.postMessage":
		return s.postMessage(p)
	case "chat.update":
		return s.updateMessage(p)
	case "chat.postEphemeral":
		return s.postEphemeral(p)
	case "conversations.history":
		return s.history(p)
	case "conversations.replies":
		return s.replies(p)
	case "conversations.info":
		return s.info(p)
	case "reactions.add", "reactions.remove":
		return s.react(method == "reactions.add", p)
	case "reactions.get":
		return s.reactionsOf(p)
	case "assistant.threads.setStatus":
		return s.setStatus(p)
	case "files.info":
		return s.fileInfo(p) // files.go
	case "files.getUploadURLExternal":
		return s.getUploadURL(p)
	case "files.completeUploadExternal":
		return s.completeUpload(p)
	}
	return slackErr("unknown_method")
}

func (s *Server) postMessage(p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	if p["text"] == "" && p["blocks"] == "" {
		return slackErr("no_text")
	}
	if ts := p["thread_ts"]; ts != "" && st.messages[ts] == nil {
		return slackErr("thread_not_found")
	}
	m := &Message{User: s.BotUserID, BotID: s.BotID, Text: p["text"], ThreadTS: p["thread_ts"], Mrkdwn: p["mrkdwn"]}
	if err := s.decorate(m, p); err != "" {
		return slackErr(err)
	}
	s.add(st, m)
	return answer{"channel": st.ch.ID, "ts": m.TS, "message": s.wire(st, m, true)}
}

func (s *Server) updateMessage(p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	m := st.messages[p["ts"]]
	switch {
	case m == nil:
		return slackErr("message_not_found")
	case m.User != s.BotUserID:
		return slackErr("cant_update_message")
	}
	if text, ok := p["text"]; ok {
		m.Text = text
	}
	if err := s.decorate(m, p); err != "" {
		return slackErr(err)
	}
	m.Edits++
	return answer{"channel": st.ch.ID, "ts": m.TS, "text": m.Text, "message": s.wire(st, m, true)}
}

// decorate sets the blocks and metadata sent with a message; it answers
// Slack's error code when one is malformed.
func (s *Server) decorate(m *Message, p map[string]string) string {
	if raw, ok := p["blocks"]; ok && raw != "" {
		var blocks []json.RawMessage
		if json.Unmarshal([]byte(raw), &blocks) != nil {
			return "invalid_blocks_format"
		}
		m.Blocks = json.RawMessage(raw)
	}
	if raw, ok := p["metadata"]; ok && raw != "" {
		var md Metadata
		if json.Unmarshal([]byte(raw), &md) != nil || md.EventType == "" {
			return "invalid_metadata_format"
		}
		m.Metadata = &md
	}
	return ""
}

func (s *Server) postEphemeral(p map[string]string) answer {
	if s.channels[p["channel"]] == nil {
		return slackErr("channel_not_found")
	}
	if p["user"] == "" {
		return slackErr("user_not_in_channel")
	}
	e := Ephemeral{Channel: p["channel"], User: p["user"], ThreadTS: p["thread_ts"], Text: p["text"], TS: s.newTS()}
	if p["blocks"] != "" {
		e.Blocks = json.RawMessage(p["blocks"])
	}
	s.ephemera = append(s.ephemera, e)
	return answer{"message_ts": e.TS}
}

// history answers the channel's top-level messages, newest first, as
// conversations.history does.
func (s *Server) history(p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	var top []*Message
	for _, m := range sortedMessages(st) {
		if (m.ThreadTS == "" || m.ThreadTS == m.TS) && inRange(m.TS, p) {
			top = append(top, m)
		}
	}
	slices.Reverse(top)
	return s.page(st, top, p, "messages")
}

// replies answers a thread's parent and replies, oldest first.
func (s *Server) replies(p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	parent := st.messages[p["ts"]]
	if parent == nil {
		return slackErr("thread_not_found")
	}
	var thread []*Message
	for _, m := range sortedMessages(st) {
		if (m == parent || (parent.ThreadTS != "" && m.ThreadTS == parent.ThreadTS)) && inRange(m.TS, p) {
			thread = append(thread, m)
		}
	}
	return s.page(st, thread, p, "messages")
}

// inRange applies oldest and latest (exclusive unless inclusive=true).
func inRange(ts string, p map[string]string) bool {
	incl := p["inclusive"] == "true" || p["inclusive"] == "1"
	if o := p["oldest"]; o != "" && o != "0" && (ts < o || (ts == o && !incl)) {
		return false
	}
	if l := p["latest"]; l != "" && l != "0" && (ts > l || (ts == l && !incl)) {
		return false
	}
	return true
}

// page cuts a list by limit (default 100) and cursor (an offset here).
func (s *Server) page(st *channelState, list []*Message, p map[string]string, key string) answer {
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	from, _ := strconv.Atoi(p["cursor"])
	from = min(max(from, 0), len(list))
	to := min(from+limit, len(list))
	withMetadata := p["include_all_metadata"] == "true" || p["include_all_metadata"] == "1"
	out := []map[string]any{}
	for _, m := range list[from:to] {
		out = append(out, s.wire(st, m, withMetadata))
	}
	resp := answer{key: out, "has_more": to < len(list)}
	if to < len(list) {
		resp["response_metadata"] = map[string]string{"next_cursor": strconv.Itoa(to)}
	}
	return resp
}

func (s *Server) info(p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	c := st.ch
	ch := map[string]any{"id": c.ID, "name": c.Name, "is_channel": !c.IM() && !c.Private, "is_group": c.Private, "is_im": c.IM(), "is_private": c.Private || c.IM(), "is_member": true}
	if p["include_num_members"] == "true" || p["include_num_members"] == "1" {
		ch["num_members"] = c.Members
	}
	return answer{"channel": ch}
}

func (s *Server) react(add bool, p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	m := st.messages[p["timestamp"]]
	if m == nil {
		return slackErr("message_not_found")
	}
	name := p["name"]
	if name == "" {
		return slackErr("invalid_name")
	}
	i := slices.Index(m.Reactions, name)
	switch {
	case add && i >= 0:
		return slackErr("already_reacted")
	case add:
		m.Reactions = append(m.Reactions, name)
	case i < 0:
		return slackErr("no_reaction")
	default:
		m.Reactions = slices.Delete(m.Reactions, i, i+1)
	}
	return answer{}
}

// reactionsOf answers a message with its reactions, as reactions.get
// does for an item of type message.
func (s *Server) reactionsOf(p map[string]string) answer {
	st := s.channels[p["channel"]]
	if st == nil {
		return slackErr("channel_not_found")
	}
	m := st.messages[p["timestamp"]]
	if m == nil {
		return slackErr("message_not_found")
	}
	return answer{"type": "message", "channel": st.ch.ID, "message": s.wire(st, m, false)}
}

func (s *Server) setStatus(p map[string]string) answer {
	if s.channels[p["channel_id"]] == nil {
		return slackErr("channel_not_found")
	}
	if p["thread_ts"] == "" {
		return slackErr("invalid_arguments")
	}
	s.statuses = append(s.statuses, Status{Channel: p["channel_id"], ThreadTS: p["thread_ts"], Status: p["status"], LoadingMessages: p["loading_messages"]})
	return answer{}
}
