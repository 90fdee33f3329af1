package pipeline

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ActivityRecordFeedback stores a feedback event, resolved to the internal
// message it is about.
const ActivityRecordFeedback = "RecordFeedback"

// MaxFeedbackEmoji bounds the reactions one feedback event carries.
const MaxFeedbackEmoji = 8

// Feedback is a user's reaction on a message of the chat, as the platform
// reported it. It travels as the session workflow's "feedback" signal, and
// the RecordFeedback activity stores it resolved to the bot's internal
// message when the message ID map knows it.
type Feedback struct {
	Channel string `json:"channel"`
	Account string `json:"account,omitempty"`
	ChatID  string `json:"chat_id"`
	// EventID is unique per platform event, so a redelivered event is
	// stored once.
	EventID string `json:"event_id"`
	// MessageID is the platform's ID of the message reacted to.
	MessageID string `json:"message_id"`
	SenderID  string `json:"sender_id"`
	// Emoji are the reactions this user now has on the message; empty
	// means they removed theirs.
	Emoji []string  `json:"emoji,omitempty"`
	At    time.Time `json:"at"`
}

// Session is the key of the session the reacted message belongs to.
func (f Feedback) Session() SessionKey {
	return SessionKey{Channel: f.Channel, Account: f.Account, Chat: f.ChatID}
}

// UnresolvedID names a reacted message the ID map does not know:
// "<channel>:<chat>:<message>".
func (f Feedback) UnresolvedID() string {
	return f.Channel + ":" + f.ChatID + ":" + f.MessageID
}

// Validate reports the first reason this event cannot be accepted.
func (f Feedback) Validate() error {
	if err := f.Session().Validate(); err != nil {
		return err
	}
	for _, field := range []struct{ name, value string }{
		{"event_id", f.EventID}, {"message_id", f.MessageID}, {"sender_id", f.SenderID},
	} {
		if err := ValidateID(field.name, field.value); err != nil {
			return err
		}
	}
	if len(f.Emoji) > MaxFeedbackEmoji {
		return fmt.Errorf("%d reactions, the limit is %d", len(f.Emoji), MaxFeedbackEmoji)
	}
	for _, e := range f.Emoji {
		if e == "" || len(e) > 64 || !utf8.ValidString(e) || strings.ContainsAny(e, " \t\r\n") {
			return fmt.Errorf("reaction %q is not an emoji", e)
		}
	}
	return nil
}
