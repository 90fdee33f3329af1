package pipeline

// ReactionState is where a user's message stands, shown to them as a
// reaction. Adapters map each state to an emoji their platform accepts.
type ReactionState string

const (
	ReactionNone        ReactionState = ""
	ReactionReceived    ReactionState = "received"
	ReactionThinking    ReactionState = "thinking"
	ReactionWaitingUser ReactionState = "waiting_user"
	ReactionDone        ReactionState = "done"
	ReactionError       ReactionState = "error"
)

// DefaultEmoji is the state-to-emoji map for platforms that accept any emoji.
var DefaultEmoji = map[ReactionState]string{
	ReactionReceived:    "👀",
	ReactionThinking:    "✍️",
	ReactionWaitingUser: "⏳",
	ReactionDone:        "✅",
	ReactionError:       "❌",
}

// Emoji returns the default emoji of a state; the empty string clears.
func (s ReactionState) Emoji() string { return DefaultEmoji[s] }
