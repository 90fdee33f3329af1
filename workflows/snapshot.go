package workflows

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Snapshot is the answer to the "state" query: what an operator needs to
// understand a session, without message text.
type Snapshot struct {
	Session       pipeline.SessionKey       `json:"session"`
	Status        Status                    `json:"status"`
	Settings      pipeline.Settings         `json:"settings"`
	Queue         pipeline.QueueSettings    `json:"queue_settings"`
	ModelOverride string                    `json:"model_override,omitempty"`
	Cooldowns     []Cooldown                `json:"cooldowns,omitempty"`
	Proposals     []Proposal                `json:"proposals,omitempty"`
	Activation    string                    `json:"activation"`
	Participants  []Participant             `json:"participants,omitempty"`
	Membership    *pipeline.MembershipCount `json:"membership,omitempty"`
	Sticky        pipeline.StickyLedger     `json:"sticky,omitempty"`
	ObservedCount int                       `json:"observed_waiting"`
	LoopGuard     pipeline.LoopGuard        `json:"loop_guard"`
	LastDenied    string                    `json:"last_denied,omitempty"`
	Buffers       []BufferView              `json:"buffers"`
	Queued        []BatchView               `json:"queued"`
	Overflow      *Overflow                 `json:"overflow,omitempty"`
	Active        *ActiveView               `json:"active,omitempty"`
	Reactions     []Reaction                `json:"reactions"`
	Pending       []pipeline.ReactionChange `json:"pending_reaction_changes"`
	LastTurn      *TurnRecord               `json:"last_turn,omitempty"`
	Deliveries    []DeliveryRecord          `json:"deliveries"`
	Counters      Counters                  `json:"counters"`
	TurnSeq       int                       `json:"turn_seq"`
	SeenMessages  int                       `json:"seen_messages"`
	LastInboundAt time.Time                 `json:"last_inbound_at,omitzero"`
	// Chat is what /think, /verbose, /usage and /send set, the usage
	// totals and the last heartbeat (runs with changeControl).
	Chat          *ChatView `json:"chat,omitempty"`
	HistoryLength int       `json:"history_length"`
	// Held says why and until when the session gets no model call (a
	// spent budget, a breaker's cool-off), as its last model step said.
	Held *pipeline.Hold `json:"held,omitempty"`
}

// BufferView, BatchView and ActiveView show messages by ID and sender only.
type (
	BufferView struct {
		Sender     string    `json:"sender"`
		Thread     string    `json:"thread,omitempty"`
		MessageIDs []string  `json:"message_ids"`
		FlushAt    time.Time `json:"flush_at"`
	}
	BatchView struct {
		Mode       pipeline.QueueMode `json:"mode"`
		MessageIDs []string           `json:"message_ids"`
		Senders    []string           `json:"senders"`
	}
	// ChatView is the chat settings and heartbeat part of the state query.
	ChatView struct {
		Think         pipeline.ThinkLevel `json:"think,omitempty"`
		Verbose       bool                `json:"verbose"`
		Usage         pipeline.UsageMode  `json:"usage,omitempty"`
		Muted         bool                `json:"muted"`
		UsageTotal    pipeline.Usage      `json:"usage_total"`
		LastHeartbeat *HeartbeatRecord    `json:"last_heartbeat,omitempty"`
		IdleFrom      time.Time           `json:"idle_from,omitzero"`
	}
	ActiveView struct {
		TurnID      string    `json:"turn_id"`
		Phase       string    `json:"phase"`
		Step        int       `json:"step"`
		MessageIDs  []string  `json:"message_ids"`
		Steered     []string  `json:"steered,omitempty"`
		Interrupted bool      `json:"interrupted,omitempty"`
		StartedAt   time.Time `json:"started_at"`
	}
)
