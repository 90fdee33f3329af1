package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on what an adapter may hand to a session. They keep one hostile or
// broken message from bloating workflow history; adapters reject or truncate
// before building an Inbound.
const (
	MaxTextBytes = 32 << 10
	MaxIDBytes   = 128
	MaxNameBytes = 256
	MaxMedia     = 10
	// MaxRefBytes bounds an attachment's reference: a platform's file
	// ID, or a signed CDN address (a few hundred bytes at most).
	MaxRefBytes = 2048
)

// ChatType says how many people a chat has, which later drives engagement.
type ChatType string

const (
	ChatDirect ChatType = "direct"
	ChatGroup  ChatType = "group"
)

// Inbound is one user message, normalized by an adapter. It is the payload of
// the session workflow's "inbound" signal, so it must stay small and
// JSON-friendly.
type Inbound struct {
	Channel    string   `json:"channel"`
	Account    string   `json:"account,omitempty"`
	ChatID     string   `json:"chat_id"`
	ChatType   ChatType `json:"chat_type,omitempty"`
	MessageID  string   `json:"message_id"`
	SenderID   string   `json:"sender_id"`
	SenderName string   `json:"sender_name,omitempty"`
	Text       string   `json:"text"`
	ThreadID   string   `json:"thread_id,omitempty"`
	ReplyTo    string   `json:"reply_to,omitempty"`
	Media      []Media  `json:"media,omitempty"`
	// Action is a button press ("approve:p3-1"); ReplyTo is then the
	// message that carried the button, and Text is empty.
	Action string `json:"action,omitempty"`
	// ReplyToken is the platform's short-lived handle for answering a
	// press to the presser alone, such as an interaction token (valid
	// minutes, good for that press only). It rides in history like the
	// rest of the message; never log it.
	ReplyToken string `json:"reply_token,omitempty"`
	// What the adapter classified, for engagement: the sender is a bot,
	// the message mentions this bot, or mentions others (and not us).
	SenderIsBot    bool `json:"sender_is_bot,omitempty"`
	MentionsBot    bool `json:"mentions_bot,omitempty"`
	MentionsOthers bool `json:"mentions_others,omitempty"`
	// ReplyToBot: the platform says ReplyTo is a message of this bot
	// (the session's own ledger only knows recent ones).
	ReplyToBot bool `json:"reply_to_bot,omitempty"`
	// ReceivedAt is when the gateway got the message, or when the
	// platform says it was sent when that is well before (a message
	// redelivered or caught up after an outage: adapters.ReceivedAt), so
	// that the reply to a message that waited says so.
	ReceivedAt time.Time `json:"received_at"`
	// Membership is the chat's member count, where the adapter knows it
	// (some ask the platform for it); the engagement rules weigh it.
	Membership *MembershipCount `json:"membership,omitempty"`
	// SenderIsOwner: the adapter authenticated the sender as an owner
	// (a token issued with --owner). Only an adapter sets it,
	// from what it verified itself, never from a request body.
	SenderIsOwner bool `json:"sender_is_owner,omitempty"`
}

// Media is a reference to an attachment kept by the platform; the bytes
// never enter workflow history.
type Media struct {
	Kind     string `json:"kind"` // photo, document, audio, video...
	Ref      string `json:"ref"`  // the platform's file ID or URL
	MimeType string `json:"mime_type,omitempty"`
	Name     string `json:"name,omitempty"`
}

// validate reports what is wrong with an attachment. Its reference and
// type are the platform's: one that is no short text is no platform's,
// and is refused. Its name is the user's: adapters clip it first
// (ClipFileName).
func (m Media) validate() error {
	switch {
	case m.Ref == "":
		return errors.New("the file has no reference")
	case len(m.Ref) > MaxRefBytes || !plainText(m.Ref):
		return fmt.Errorf("the file's reference must be text without control characters, at most %d bytes", MaxRefBytes)
	case len(m.Kind) > MaxIDBytes || !plainText(m.Kind) || len(m.MimeType) > MaxIDBytes || !plainText(m.MimeType):
		return fmt.Errorf("the file's kind and type must be text without control characters, at most %d bytes each", MaxIDBytes)
	case len(m.Name) > MaxNameBytes || !plainText(m.Name):
		return fmt.Errorf("the file's name must be text without control characters, at most %d bytes", MaxNameBytes)
	}
	return nil
}

// plainText is whether s is valid UTF-8 without control characters.
func plainText(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// MaxReplyTokenBytes bounds Inbound.ReplyToken (platforms' are about 200
// bytes).
const MaxReplyTokenBytes = 1024

// Size is about the bytes the message takes in workflow state: its
// strings, and a little for the field names and the rest.
func (in Inbound) Size() int {
	const fields = 200
	n := fields + len(in.Channel) + len(in.Account) + len(in.ChatID) + len(in.MessageID) + len(in.SenderID) +
		len(in.SenderName) + len(in.Text) + len(in.ThreadID) + len(in.ReplyTo) + len(in.Action) + len(in.ReplyToken)
	for _, m := range in.Media {
		n += 60 + len(m.Kind) + len(m.Ref) + len(m.MimeType) + len(m.Name)
	}
	return n
}

// Session is the key of the session this message belongs to.
func (in Inbound) Session() SessionKey {
	return SessionKey{Channel: in.Channel, Account: in.Account, Chat: in.ChatID}
}

// SessionIn is the key of the session this message belongs to under
// scope: per-sender gives each sender in a group chat a session of their
// own. A direct chat has one sender, so its session stays the chat's and
// switching the scope does not move it.
//
// A button press on a proposal, or a typed /approve or /reject of one,
// goes to the session whose proposal it is, which its action names
// (ProposalAction) or its reference (ProposalRef), not to the presser's: an
// owner approves another sender's call there, where the session still
// checks who may decide. Only a per-sender session, which is a group's,
// posts such buttons; the press is routed by its action whatever its
// chat type, as an adapter may not know the chat type of a press (one
// marks every press direct).
func (in Inbound) SessionIn(scope SessionScope) SessionKey {
	key := in.Session()
	if scope != SessionScopePerSender {
		return key
	}
	if in.Action != "" {
		if _, _, sender, ok := ParseProposalAction(in.Action); ok && sender != "" {
			key.Sender = sender
			return key
		}
	}
	if in.ChatType != ChatGroup {
		return key
	}
	// A typed message says its chat type: a direct chat's session has no
	// sender, so a reference there opens no session of one.
	if sender := DecisionSession(in.Text); sender != "" {
		key.Sender = sender
		return key
	}
	key.Sender = in.SenderID
	return key
}

// Thread is the conversation lane inside the session.
func (in Inbound) Thread() ThreadKey { return ThreadKeyOf(in.ThreadID) }

// Validate reports the first reason this Inbound cannot be accepted. Adapters
// call it before signalling, so a bad message is refused at the door with a
// reason instead of failing inside the workflow.
func (in Inbound) Validate() error {
	if err := in.Session().Validate(); err != nil {
		return err
	}
	for _, f := range []struct{ name, value string }{
		{"message_id", in.MessageID},
		{"sender_id", in.SenderID},
	} {
		if err := ValidateID(f.name, f.value); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, value string }{
		{"thread_id", in.ThreadID},
		{"reply_to", in.ReplyTo},
	} {
		if f.value == "" {
			continue
		}
		if err := ValidateID(f.name, f.value); err != nil {
			return err
		}
	}
	if len(in.SenderName) > MaxNameBytes || !utf8.ValidString(in.SenderName) {
		return fmt.Errorf("sender_name must be valid UTF-8 of at most %d bytes", MaxNameBytes)
	}
	if len(in.Action) > MaxIDBytes {
		return fmt.Errorf("action is longer than %d bytes", MaxIDBytes)
	}
	if len(in.ReplyToken) > MaxReplyTokenBytes {
		return fmt.Errorf("reply_token is longer than %d bytes", MaxReplyTokenBytes)
	}
	if in.Membership != nil && in.Membership.Humans < 0 {
		return fmt.Errorf("membership counts %d humans", in.Membership.Humans)
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 && in.Action == "" {
		return errors.New("text is empty")
	}
	if len(in.Media) > MaxMedia {
		return fmt.Errorf("%d attachments, the limit is %d", len(in.Media), MaxMedia)
	}
	for i, m := range in.Media {
		if err := m.validate(); err != nil {
			return fmt.Errorf("attachment %d: %w", i+1, err)
		}
	}
	if len(in.Text) > MaxTextBytes {
		return fmt.Errorf("text is %d bytes, the limit is %d", len(in.Text), MaxTextBytes)
	}
	if !utf8.ValidString(in.Text) {
		return errors.New("text is not valid UTF-8")
	}
	return nil
}

// ValidateID checks a platform identifier: non-empty, bounded, and free of the
// characters that would make workflow IDs and logs ambiguous (separators,
// whitespace, control characters). "." and ".." are refused too: IDs are
// path segments of platform routes (such as /bot/chats/{chat}/...),
// where a URL cleaner would drop them, so their session could never be
// answered.
func ValidateID(field, id string) error {
	if id == "" {
		return fmt.Errorf("%s is missing", field)
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%s %q is a path segment of its own; use another ID", field, id)
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf("%s is longer than %d bytes", field, MaxIDBytes)
	}
	for _, r := range id {
		if !idRune(r) {
			return fmt.Errorf("%s contains %q; allowed are letters, digits and - _ . @ +", field, r)
		}
	}
	return nil
}

func idRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case r == '-', r == '_', r == '.', r == '@', r == '+':
		return true
	}
	return false
}

// TextWithMedia is the message as the model reads it: its text, then one
// line per attachment naming its kind and platform reference, so a tool
// can fetch it (the bytes never enter history).
func (in Inbound) TextWithMedia() string {
	lines := []string{}
	if strings.TrimSpace(in.Text) != "" {
		lines = append(lines, in.Text)
	}
	for _, m := range in.Media {
		lines = append(lines, m.Line())
	}
	return strings.Join(lines, "\n")
}

// Line is the attachment's line in TextWithMedia; a worker that shows the
// model the file itself finds the line by it and replaces it.
func (m Media) Line() string {
	return "[" + m.Describe() + " attached, ref " + m.Ref + "]"
}

// Describe names the attachment: its kind, name and type.
func (m Media) Describe() string {
	desc := m.Kind
	if m.Name != "" {
		desc += " " + strconv.Quote(m.Name)
	}
	if m.MimeType != "" {
		desc += " (" + m.MimeType + ")"
	}
	return desc
}

// TruncatedMark ends a message text an adapter cut to MaxTextBytes, so
// the model knows there was more.
const TruncatedMark = "\n[message truncated: it was longer than replyflow accepts]"

// ClipText is a platform message's text as an Inbound takes it: valid
// UTF-8, and cut with TruncatedMark when longer than MaxTextBytes.
func ClipText(text string) string {
	if len(text) <= MaxTextBytes {
		return strings.ToValidUTF8(text, "")
	}
	return strings.ToValidUTF8(text[:MaxTextBytes-len(TruncatedMark)], "") + TruncatedMark
}

// ClipName is a sender's or a file's name as an Inbound takes it: valid
// UTF-8 of at most MaxNameBytes.
func ClipName(name string) string {
	if len(name) > MaxNameBytes {
		name = name[:MaxNameBytes]
	}
	return strings.ToValidUTF8(name, "")
}

// ClipFileName is a file's name as an Inbound takes it: ClipName's,
// without control characters and without bidirectional controls, which
// would let a name show as another ("invoice\u202Efdp.exe" shows as
// "invoiceexe.pdf"). A name is shown to people and to the model and kept
// in the store (where PostgreSQL takes no NUL); it is never a path, so
// separators and dots stay as the user wrote them.
func ClipFileName(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	return ClipName(name)
}

// MediaKindOf is a Media Kind for a MIME type.
func MediaKindOf(mime string) string {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return "photo"
	case strings.HasPrefix(mime, "video/"):
		return "video"
	case strings.HasPrefix(mime, "audio/"):
		return "audio"
	}
	return "document"
}
