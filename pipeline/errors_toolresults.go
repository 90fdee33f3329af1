package pipeline

// ErrToolResultsMissing is the type of a model step that cannot be asked
// because a tool result an earlier step stored is gone from the store. It
// says nothing about the model: the workflow does not fall back through
// the chain (every model would fail the same way) and tells the user
// plainly. Non-retryable.
const ErrToolResultsMissing = "ToolResultsMissing"

// ReplyToolResultsMissing is the reply when a turn ends because a tool
// result it needs is gone.
const ReplyToolResultsMissing = "⚠️ Sorry, I lost the results of the tools this answer needed, so I stopped here. Please ask again."
