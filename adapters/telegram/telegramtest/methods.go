package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"unicode/utf16"
)

// maxMessageLength is Telegram's limit on a message's visible text, in
// UTF-16 code units.
const maxMessageLength = 4096

// allowedReactions is the emoji set bots may react with.
var allowedReactions = map[string]bool{}

func init() {
	for _, e := range []string{"👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏", "👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", "❤\u200d🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾", "💋", "🖕", "😈", "😴", "😭", "🤓", "👻", "👨\u200d💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "\u270d", "🤗", "🫡", "🎅", "🎄", "☃", "💅", "🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾", "🤷\u200d♂", "🤷", "🤷\u200d♀", "😡"} {
		allowedReactions[e] = true
	}
}

var chatActions = map[string]bool{"typing": true, "upload_photo": true, "record_video": true, "upload_video": true, "record_voice": true, "upload_voice": true, "upload_document": true, "choose_sticker": true, "find_location": true, "record_video_note": true, "upload_video_note": true}

func (s *Server) dispatch(ctx context.Context, method string, p map[string]string) (int, wireResponse) {
	switch method {
	case "getUpdates":
		return s.getUpdates(ctx, p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "getMe":
		return ok(s.Bot.wire())
	case "deleteWebhook":
		s.stopWebhookLocked()
		return ok(true)
	case "setWebhook":
		s.setWebhookLocked(p)
		return ok(true)
	case "sendMessage":
		return s.sendMessage(p)
	case "getFile":
		return s.getFile(p)
	case "sendDocument":
		return s.sendDocument(p)
	case "sendVoice":
		return s.sendVoice(p)
	case "editMessageText":
		return s.editMessage(p, true)
	case "editMessageReplyMarkup":
		return s.editMessage(p, false)
	case "setMessageReaction":
		return s.setMessageReaction(p)
	case "sendChatAction":
		if _, bad := s.chatOf(p); bad != nil {
			return bad.status, bad.resp
		}
		if !chatActions[p["action"]] {
			return badRequest("wrong parameter action in request")
		}
		return ok(true)
	case "answerCallbackQuery":
		c := s.callbacks[p["callback_query_id"]]
		if c == nil || c.answered {
			return badRequest("query is too old and response timeout expired or query ID is invalid")
		}
		c.answered, c.text = true, p["text"]
		return ok(true)
	}
	return http.StatusNotFound, wireResponse{ErrorCode: http.StatusNotFound, Description: "Not Found: method not found"}
}

type failure struct {
	status int
	resp   wireResponse
}

func fail(status int, resp wireResponse) *failure { return &failure{status, resp} }

func (s *Server) chatOf(p map[string]string) (*chatState, *failure) {
	id, err := strconv.ParseInt(p["chat_id"], 10, 64)
	st := s.chats[id]
	if err != nil || st == nil {
		return nil, fail(badRequest("chat not found"))
	}
	return st, nil
}

// text checks a message text as Telegram does, and returns its visible
// text and the HTML sent, if any.
func text(p map[string]string) (visible, html string, bad *failure) {
	visible = p["text"]
	switch p["parse_mode"] {
	case "":
	case "HTML":
		parsed, err := ParseHTML(visible)
		if err != nil {
			return "", "", fail(badRequest("%s", err.Error()))
		}
		visible, html = parsed, p["text"]
	default:
		return "", "", fail(badRequest("unsupported parse_mode %q in this fake", p["parse_mode"]))
	}
	switch n := len(utf16.Encode([]rune(visible))); {
	case n == 0:
		return "", "", fail(badRequest("message text is empty"))
	case n > maxMessageLength:
		return "", "", fail(badRequest("message is too long"))
	}
	return visible, html, nil
}

func buttonsOf(raw string) ([][]Button, *failure) {
	if raw == "" {
		return nil, nil
	}
	var m wireMarkup
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fail(badRequest("can't parse reply keyboard markup JSON object"))
	}
	var out [][]Button
	for _, row := range m.InlineKeyboard {
		var r []Button
		for _, b := range row {
			if b.Text == "" || len(b.CallbackData) > 64 {
				return nil, fail(badRequest("BUTTON_DATA_INVALID"))
			}
			r = append(r, Button{Text: b.Text, Data: b.CallbackData})
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Server) sendMessage(p map[string]string) (int, wireResponse) {
	st, bad := s.chatOf(p)
	if bad != nil {
		return bad.status, bad.resp
	}
	visible, html, bad := text(p)
	if bad != nil {
		return bad.status, bad.resp
	}
	buttons, bad := buttonsOf(p["reply_markup"])
	if bad != nil {
		return bad.status, bad.resp
	}
	m := &Message{From: s.Bot, Text: visible, HTML: html, Buttons: buttons, date: s.now().Unix()}
	if raw := p["message_thread_id"]; raw != "" {
		topic, _ := strconv.Atoi(raw)
		if first := st.messages[topic]; st.chat.Forum && (first == nil || !first.topic) {
			return badRequest("message thread not found")
		}
		m.ThreadID = topic
	}
	if raw := p["reply_parameters"]; raw != "" {
		var rp struct {
			MessageID                int  `json:"message_id"`
			AllowSendingWithoutReply bool `json:"allow_sending_without_reply"`
		}
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			return badRequest("can't parse reply parameters JSON object")
		}
		switch {
		case st.messages[rp.MessageID] != nil:
			m.ReplyTo = rp.MessageID
		case !rp.AllowSendingWithoutReply:
			return badRequest("message to be replied not found")
		}
	}
	st.add(m)
	return ok(st.wire(m, 0))
}

func (s *Server) editMessage(p map[string]string, withText bool) (int, wireResponse) {
	st, bad := s.chatOf(p)
	if bad != nil {
		return bad.status, bad.resp
	}
	id, _ := strconv.Atoi(p["message_id"])
	m := st.messages[id]
	switch {
	case m == nil:
		return badRequest("message to edit not found")
	case m.From.ID != s.Bot.ID:
		return badRequest("message can't be edited")
	}
	buttons, bad := buttonsOf(p["reply_markup"])
	if bad != nil {
		return bad.status, bad.resp
	}
	visible, html := m.Text, m.HTML
	if withText {
		if visible, html, bad = text(p); bad != nil {
			return bad.status, bad.resp
		}
	}
	if visible == m.Text && html == m.HTML && reflect.DeepEqual(buttons, m.Buttons) {
		return badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.Text, m.HTML, m.Buttons = visible, html, buttons
	m.Edits++
	return ok(st.wire(m, 0))
}

func (s *Server) setMessageReaction(p map[string]string) (int, wireResponse) {
	st, bad := s.chatOf(p)
	if bad != nil {
		return bad.status, bad.resp
	}
	id, _ := strconv.Atoi(p["message_id"])
	m := st.messages[id]
	if m == nil {
		return badRequest("message to react not found")
	}
	var types []wireReaction
	if raw := p["reaction"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &types); err != nil {
			return badRequest("can't parse reaction types JSON object")
		}
	}
	emoji := []string{}
	for _, t := range types {
		if t.Type != "emoji" || !allowedReactions[t.Emoji] || st.reactionsOff {
			return badRequest("REACTION_INVALID")
		}
		emoji = append(emoji, t.Emoji)
	}
	if len(emoji) > 1 {
		return badRequest("REACTIONS_TOO_MANY")
	}
	m.Reaction = emoji
	st.reactions = append(st.reactions, ReactionChange{ChatID: st.chat.ID, MessageID: id, Emoji: emoji})
	return ok(true)
}
