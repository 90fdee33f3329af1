package session

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// TurnRecord is what the state query and the UI show of a turn.
type TurnRecord struct {
	TurnID       string          `json:"turn_id"`
	MessageIDs   []string        `json:"message_ids"`
	Model        string          `json:"model,omitempty"`
	Fallback     []string        `json:"fallback,omitempty"`
	StartedAt    time.Time       `json:"started_at"`
	FinishedAt   time.Time       `json:"finished_at,omitzero"`
	Outcome      string          `json:"outcome"`
	Error        string          `json:"error,omitempty"`
	Steps        int             `json:"steps"`
	Chunks       int             `json:"chunks"`
	Delivered    int             `json:"delivered"`
	Heartbeat    bool            `json:"heartbeat,omitempty"`
	Usage        *pipeline.Usage `json:"usage,omitempty"`
	ThinkIgnored bool            `json:"think_ignored,omitempty"`
}
