package workflows

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Bounds on what the state carries, so a busy session's state (and so each
// continue-as-new input) stays small.
const (
	seenCapacity   = 5000
	deliveryWindow = 200
)

// SessionParams is the workflow's input: the session it serves and, after a
// continue-as-new, everything it carried.
type SessionParams struct {
	Session pipeline.SessionKey `json:"session"`
	State   *State              `json:"state,omitempty"`
}

// State is the whole durable state of a session, carried across
// continue-as-new.
type State struct {
	// Seen holds recent platform message IDs, oldest first, so a message
	// delivered twice is processed once.
	Seen []string `json:"seen"`
	// Queue holds messages waiting for a turn, oldest first.
	Queue []pipeline.Inbound `json:"queue"`
	// Reactions is the reaction state of user messages not yet cleared.
	Reactions []Reaction `json:"reactions"`
	// ReactionChanges are reaction updates not yet applied, in order.
	ReactionChanges []pipeline.ReactionChange `json:"reaction_changes"`
	TurnSeq         int                       `json:"turn_seq"`
	LastTurn        *TurnRecord               `json:"last_turn,omitempty"`
	// Deliveries maps recent reply chunks to their platform message IDs.
	Deliveries    []DeliveryRecord `json:"deliveries"`
	LastInboundAt time.Time        `json:"last_inbound_at"`
	Status        Status           `json:"status"`
}

// Reaction is the reaction a user message should show, and when it is due
// to be cleared (zero while it must stay).
type Reaction struct {
	MessageID string                 `json:"message_id"`
	ThreadID  string                 `json:"thread_id,omitempty"`
	State     pipeline.ReactionState `json:"state"`
	ClearAt   time.Time              `json:"clear_at,omitzero"`
}

// TurnRecord is what an operator needs to know about the latest turn.
type TurnRecord struct {
	TurnID     string    `json:"turn_id"`
	MessageIDs []string  `json:"message_ids"`
	Model      string    `json:"model,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	Chunks     int       `json:"chunks"`
	Delivered  int       `json:"delivered"`
}

// DeliveryRecord maps one delivered chunk to the platform's message ID.
type DeliveryRecord struct {
	TurnID            string `json:"turn_id"`
	Chunk             int    `json:"chunk"`
	PlatformMessageID string `json:"platform_message_id"`
}

func (s *State) seen(id string) bool {
	for _, v := range s.Seen {
		if v == id {
			return true
		}
	}
	return false
}

func (s *State) remember(id string) {
	s.Seen = append(s.Seen, id)
	if over := len(s.Seen) - seenCapacity; over > 0 {
		s.Seen = append([]string(nil), s.Seen[over:]...)
	}
}

func (s *State) reaction(messageID string) *Reaction {
	for i := range s.Reactions {
		if s.Reactions[i].MessageID == messageID {
			return &s.Reactions[i]
		}
	}
	return nil
}

func (s *State) dropReaction(messageID string) {
	kept := s.Reactions[:0]
	for _, r := range s.Reactions {
		if r.MessageID != messageID {
			kept = append(kept, r)
		}
	}
	s.Reactions = kept
}

func (s *State) recordDelivery(d DeliveryRecord) {
	s.Deliveries = append(s.Deliveries, d)
	if over := len(s.Deliveries) - deliveryWindow; over > 0 {
		s.Deliveries = append([]DeliveryRecord(nil), s.Deliveries[over:]...)
	}
}

// quiet is true when nothing is pending: no queued message, no reaction to
// apply or clear. Only a quiet session may complete.
func (s *State) quiet() bool {
	return len(s.Queue) == 0 && len(s.ReactionChanges) == 0 && len(s.Reactions) == 0
}

// Snapshot is the answer to the "state" query: what an operator needs to
// understand a session, without message text.
type Snapshot struct {
	Session         pipeline.SessionKey       `json:"session"`
	Status          Status                    `json:"status"`
	Settings        pipeline.Settings         `json:"settings"`
	Queue           []QueuedMessage           `json:"queue"`
	Reactions       []Reaction                `json:"reactions"`
	ReactionChanges []pipeline.ReactionChange `json:"reaction_changes"`
	TurnSeq         int                       `json:"turn_seq"`
	LastTurn        *TurnRecord               `json:"last_turn,omitempty"`
	Deliveries      []DeliveryRecord          `json:"deliveries"`
	SeenMessages    int                       `json:"seen_messages"`
	LastInboundAt   time.Time                 `json:"last_inbound_at,omitzero"`
	HistoryLength   int                       `json:"history_length"`
}

// QueuedMessage describes a queued message without its text.
type QueuedMessage struct {
	MessageID  string    `json:"message_id"`
	SenderID   string    `json:"sender_id"`
	ThreadID   string    `json:"thread_id,omitempty"`
	TextBytes  int       `json:"text_bytes"`
	ReceivedAt time.Time `json:"received_at"`
}
