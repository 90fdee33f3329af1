package session

import "github.com/replyflow/replyflow/pipeline"

// TurnOptions are the chat's settings a turn runs with.
type TurnOptions struct {
	Think   pipeline.ThinkLevel `json:"think,omitempty"`
	Verbose bool                `json:"verbose,omitempty"`
	Usage   pipeline.UsageMode  `json:"usage,omitempty"`
	// Model is a /model directive for this turn: strict, like the chat's
	// /model.
	Model string `json:"model,omitempty"`
	Muted bool   `json:"muted,omitempty"`
	// ThinkNote: say in the footer when the model takes no reasoning
	// effort.
	ThinkNote bool `json:"think_note,omitempty"`
}
