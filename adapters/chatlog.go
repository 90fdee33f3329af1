package adapters

import "context"

// ChatLog keeps what a platform with no history of its own (the web chat)
// shows in each chat, so that a page reloaded after a gateway restart, or
// served by another gateway, shows the chat so far. The store implements
// it (REPLYFLOW_STORE_DSN), and keeps each chat within its bounds
// (store.ChatLogMessages, store.ChatLogBytes, Retention.ChatLog).
type ChatLog interface {
	// AddChatMessage records a message. Its Key (an idempotency key, or
	// the message's own ID) makes it idempotent: a Key the chat already
	// has returns the ID recorded with it and fresh false, and changes
	// nothing.
	AddChatMessage(ctx context.Context, m ChatLogMessage) (id string, fresh bool, err error)
	// EditChatMessage replaces a recorded message's Data; a message the
	// log no longer has is not an error.
	EditChatMessage(ctx context.Context, chat, id string, data []byte) error
	// SetChatReaction sets (or, with "", clears) the reaction shown on a
	// recorded message; a message the log no longer has is not an error.
	SetChatReaction(ctx context.Context, chat, id, emoji string) error
	// ChatMessages returns the chat's recorded messages, oldest first.
	ChatMessages(ctx context.Context, chat string) ([]ChatLogMessage, error)
	// ChatMessage returns the chat's recorded message with ID id (its
	// Key left empty); ok is false when the log does not have it.
	ChatMessage(ctx context.Context, chat, id string) (m ChatLogMessage, ok bool, err error)
}

// ChatLogMessage is one message of a ChatLog.
type ChatLogMessage struct {
	Chat string
	ID   string
	// Key makes AddChatMessage idempotent; it is not returned.
	Key string
	// Kind is the platform's (the web chat's "user" and "message").
	Kind string
	// Data is the message as the platform shows it (JSON).
	Data     []byte
	Reaction string
}
