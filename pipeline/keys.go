package pipeline

import (
	"errors"
	"strings"
)

// WorkflowIDPrefix starts every session workflow ID, so a visibility query
// (WorkflowId STARTS_WITH "session:") finds them all.
const WorkflowIDPrefix = "session:"

// SessionKey identifies one conversation: one workflow. Account is the bot's
// identity on the platform and is empty where a channel has only one bot
// (the web chat).
type SessionKey struct {
	Channel string `json:"channel"`
	Account string `json:"account,omitempty"`
	Chat    string `json:"chat"`
}

// WorkflowID is readable and derived from platform IDs only, so a person can
// type it: session:webchat:demo, session:telegram:mybot:-100123.
func (k SessionKey) WorkflowID() string {
	parts := []string{k.Channel}
	if k.Account != "" {
		parts = append(parts, k.Account)
	}
	parts = append(parts, k.Chat)
	return WorkflowIDPrefix + strings.Join(parts, ":")
}

// Validate rejects keys that would produce an ambiguous workflow ID.
func (k SessionKey) Validate() error {
	if k.Channel == "" {
		return errors.New("channel is missing")
	}
	for _, r := range k.Channel {
		if r < 'a' || r > 'z' {
			return errors.New("channel must be lower-case letters")
		}
	}
	if k.Account != "" {
		if err := ValidateID("account", k.Account); err != nil {
			return err
		}
	}
	return ValidateID("chat", k.Chat)
}

// ThreadKey is the conversation lane inside a session: a topic, a reply
// chain or a platform thread. The zero value is the root of the chat.
type ThreadKey string

// RootThread is the lane of messages that are in no thread.
const RootThread ThreadKey = ""

// ThreadKeyOf maps an adapter's thread ID to a key; adapters decide which of
// their platform's IDs is the thread (see DESIGN.md, "Keys").
func ThreadKeyOf(threadID string) ThreadKey { return ThreadKey(threadID) }

// String names the lane for logs and summaries.
func (t ThreadKey) String() string {
	if t == RootThread {
		return "root"
	}
	return string(t)
}

// BufferKey groups the messages that a debounce window may merge: never
// across threads or senders.
type BufferKey struct {
	Thread ThreadKey `json:"thread"`
	Sender string    `json:"sender"`
}

// BufferKeyOf is the debounce key of a message within its session.
func BufferKeyOf(in Inbound) BufferKey {
	return BufferKey{Thread: in.Thread(), Sender: in.SenderID}
}
