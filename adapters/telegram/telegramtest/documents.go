package telegramtest

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
)

// uploadNameSuffix marks the file name of an uploaded multipart field in
// decodeParams' map ("document" holds the bytes, "document\x00name" the
// name).
const uploadNameSuffix = "\x00name"

// maxCaptionLength is Telegram's limit on a caption, in UTF-16 code units.
const maxCaptionLength = 1024

// SentFile is a document the bot uploaded.
type SentFile struct {
	Name string
	Data []byte
}

// sendDocument takes an uploaded document (a file ID or URL is not
// supported by this fake), with an optional plain caption, in a topic
// and as a reply as sendMessage does.
func (s *Server) sendDocument(p map[string]string) (int, wireResponse) {
	return s.sendUpload(p, "document", func(st *chatState, name string, data []byte) *Message {
		m := &Message{From: s.Bot, Text: p["caption"], caption: true, date: s.now().Unix(), File: &SentFile{Name: name, Data: data}}
		m.document = &wireDocument{FileID: "doc-" + strconv.Itoa(st.nextID+1), FileUniqueID: "u-doc", FileName: name, MimeType: "text/markdown"}
		return m
	})
}

// sendVoice takes an uploaded voice note (Ogg/Opus; a file ID or URL is
// not supported by this fake), in a topic and as a reply as sendMessage
// does. The fake keeps its bytes in Message.VoiceNote.
func (s *Server) sendVoice(p map[string]string) (int, wireResponse) {
	return s.sendUpload(p, "voice", func(st *chatState, name string, data []byte) *Message {
		m := &Message{From: s.Bot, Text: p["caption"], caption: true, date: s.now().Unix(), VoiceNote: &SentFile{Name: name, Data: data}}
		m.voice = "voice-" + strconv.Itoa(st.nextID+1)
		return m
	})
}

// sendUpload checks a send of an uploaded file in field (its caption
// too), makes the message with build, and places it in its topic and as
// a reply as sendMessage does.
func (s *Server) sendUpload(p map[string]string, field string, build func(st *chatState, name string, data []byte) *Message) (int, wireResponse) {
	st, bad := s.chatOf(p)
	if bad != nil {
		return bad.status, bad.resp
	}
	name, uploaded := p[field+uploadNameSuffix]
	if !uploaded {
		return badRequest("there is no %s in the request", field)
	}
	if p[field] == "" {
		return badRequest("file must be non-empty")
	}
	if len(utf16.Encode([]rune(p["caption"]))) > maxCaptionLength {
		return badRequest("message caption is too long")
	}
	m := build(st, name, []byte(p[field]))
	if raw := p["message_thread_id"]; raw != "" {
		m.ThreadID, _ = strconv.Atoi(raw)
	}
	if raw := p["reply_parameters"]; raw != "" {
		var rp struct {
			MessageID int `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			return badRequest("can't parse reply parameters JSON object")
		}
		if st.messages[rp.MessageID] != nil {
			m.ReplyTo = rp.MessageID
		}
	}
	st.add(m)
	return ok(st.wire(m, 0))
}
