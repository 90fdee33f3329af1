package pipeline

import (
	"errors"
	"fmt"
	"strings"
)

// WorkflowIDPrefix starts every session workflow ID, so a visibility query
// (WorkflowId STARTS_WITH "session:") finds them all.
const WorkflowIDPrefix = "session:"

// SessionKey identifies one conversation: one workflow. Account is the bot's
// identity on the platform and is empty where a channel has only one bot.
type SessionKey struct {
	Channel string `json:"channel"`
	Account string `json:"account,omitempty"`
	Chat    string `json:"chat"`
	// Sender is set for the session of one sender in a group chat
	// (SessionScopePerSender): the sender's platform ID. Chat stays the
	// chat, so replies go there and the chat's search attribute
	// (ReplyflowChat) finds the sender's session with the chat's.
	Sender string `json:"sender,omitempty"`
}

// senderMark ends a chat's workflow ID before the sender of a per-sender
// session. No ID holds ":" or "~" (ValidateID), so the ID reads back
// exactly, and all the per-sender sessions of a chat start with the
// chat's own workflow ID and the mark.
const senderMark = ":~"

// WorkflowID is readable and derived from platform IDs only, so a person can
// type it: session:web:demo, session:chat:mybot:-100123, and for one
// sender of that group session:chat:mybot:-100123:~4242.
func (k SessionKey) WorkflowID() string {
	parts := []string{k.Channel}
	if k.Account != "" {
		parts = append(parts, k.Account)
	}
	parts = append(parts, k.Chat)
	id := WorkflowIDPrefix + strings.Join(parts, ":")
	if k.Sender != "" {
		id += senderMark + k.Sender
	}
	return id
}

// ParseWorkflowID reads a session key back from its workflow ID:
// session:<channel>[:<account>]:<chat>[:~<sender>]. It is WorkflowID's
// inverse: it refuses any ID that no valid key gives.
func ParseWorkflowID(id string) (SessionKey, bool) {
	rest, ok := strings.CutPrefix(id, WorkflowIDPrefix)
	if !ok {
		return SessionKey{}, false
	}
	var key SessionKey
	if chat, sender, per := strings.Cut(rest, senderMark); per {
		if sender == "" {
			return SessionKey{}, false
		}
		rest, key.Sender = chat, sender
	}
	parts := strings.Split(rest, ":")
	switch len(parts) {
	case 2:
		key.Channel, key.Chat = parts[0], parts[1]
	case 3:
		if parts[1] == "" { // "session:a::b" would read back as "session:a:b"
			return SessionKey{}, false
		}
		key.Channel, key.Account, key.Chat = parts[0], parts[1], parts[2]
	default:
		return SessionKey{}, false
	}
	return key, key.Validate() == nil
}

// SessionScope says what one session is in a group chat.
type SessionScope string

const (
	// SessionScopeShared: a group chat is one session, shared by all its
	// members (the default).
	SessionScopeShared SessionScope = "shared"
	// SessionScopePerSender: each sender in a group chat has a session of
	// their own (REPLYFLOW_SESSION_SCOPE=per-sender).
	SessionScopePerSender SessionScope = "per-sender"
)

// ParseSessionScope reads a scope setting; empty is the default, shared.
func ParseSessionScope(s string) (SessionScope, error) {
	switch scope := SessionScope(strings.ToLower(strings.TrimSpace(s))); scope {
	case "":
		return SessionScopeShared, nil
	case SessionScopeShared, SessionScopePerSender:
		return scope, nil
	}
	return "", fmt.Errorf("unknown session scope %q; use %s or %s", s, SessionScopeShared, SessionScopePerSender)
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
	if k.Sender != "" {
		if err := ValidateID("sender", k.Sender); err != nil {
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
