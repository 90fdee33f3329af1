package workflows

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// SessionParams is the workflow's input: the session it serves and, after a
// continue-as-new, everything it carried.
type SessionParams struct {
	Session pipeline.SessionKey `json:"session"`
	State   *State              `json:"state,omitempty"`
}

// State is the whole durable state of a session, carried across
// continue-as-new.
//
// Each part of the session owns one embedded struct; encoding/json promotes
// their fields, so the JSON is the flat object running sessions carry
// (testdata/state_full.json guards it). A field name must stay unique
// across the parts.
type State struct {
	IntakeState
	TurnState
	EngagementState
	ReactionsState
	ProposalsState
	RepliesState
	ControlState
	// Status is what the search attributes last said; the main loop keeps
	// it.
	Status Status `json:"status"`
	// Counters are running totals every part adds to.
	Counters Counters `json:"counters"`
}

// SeenMessage is one entry of the dedupe window.
type SeenMessage struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// Buffer is an open debounce window: messages from one sender in one
// thread, flushed as one batch at FlushAt unless another message re-arms it.
type Buffer struct {
	Key      pipeline.BufferKey `json:"key"`
	Messages []pipeline.Inbound `json:"messages"`
	FlushAt  time.Time          `json:"flush_at"`
	// FirstAt is when the window opened; it flushes at the latest the
	// maximum wait after it (zero in runs before that bound).
	FirstAt time.Time `json:"first_at,omitzero"`
	// Gen tells a buffer from an earlier one with the same key, so a
	// stale flush timer leaves it alone.
	Gen int `json:"gen"`
}

// Batch is the unit a turn answers: one debounced burst, with the queue
// settings in force when it arrived.
type Batch struct {
	Messages []pipeline.Inbound     `json:"messages"`
	Queue    pipeline.QueueSettings `json:"queue"`
	// Queued is true for a batch that arrived while a turn was running.
	Queued bool `json:"queued,omitempty"`
	// NoAnchor: the reply anchors no message (a gate-forwarded batch).
	NoAnchor bool `json:"no_anchor,omitempty"`
	// Directives are the batch's messages' directives, for its turn
	// only (runs with changeControl).
	Directives *pipeline.Directives `json:"directives,omitempty"`
}

// Text is the batch's turn text.
func (b Batch) Text() string {
	texts := make([]string, len(b.Messages))
	for i, m := range b.Messages {
		texts[i] = m.TextWithMedia()
	}
	return pipeline.JoinTexts(texts)
}

// Last is the message a reply anchors.
func (b Batch) Last() pipeline.Inbound { return b.Messages[len(b.Messages)-1] }

// Overflow is what the summarize policy kept of dropped batches.
type Overflow struct {
	Dropped    int      `json:"dropped"`
	Summaries  []string `json:"summaries"`
	MessageIDs []string `json:"message_ids"`
}

// Turn phases.
const (
	PhaseModel      = "model"
	PhaseWaiting    = "waiting_user"
	PhaseDelivering = "delivering"
	// PhaseParked is a turn whose delivery failed past its deadline; it
	// waits for a retry signal.
	PhaseParked = "parked"
)

// ActiveTurn is the turn being run.
type ActiveTurn struct {
	// NoAnchor: the reply anchors no message (a gate-forwarded batch).
	NoAnchor bool               `json:"no_anchor,omitempty"`
	TurnID   string             `json:"turn_id"`
	Messages []pipeline.Inbound `json:"messages"`
	Phase    string             `json:"phase"`
	// Steered are messages to inject at the next model step; if no step
	// comes, they are queued as a follow-up.
	Steered []pipeline.Inbound `json:"steered,omitempty"`
	// SteeredBacklog are injected the same way but are queued already.
	SteeredBacklog []pipeline.Inbound `json:"steered_backlog,omitempty"`
	Step           int                `json:"step"`
	// Interrupted is set when a newer message cancelled this turn.
	Interrupted bool `json:"interrupted,omitempty"`
	// Aborted is set by a stop command.
	Aborted bool `json:"aborted,omitempty"`
	// RetryRequested is set by the retry signal while parked.
	RetryRequested bool      `json:"retry_requested,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	// Options are the chat settings the turn runs with (nil in runs
	// before changeControl: all off).
	Options *TurnOptions `json:"options,omitempty"`
	// Heartbeat is the tick ID of a heartbeat turn.
	Heartbeat string `json:"heartbeat,omitempty"`
	// SlowDelivery is set (runs with changeCost) once the reply leaves
	// the fast path (delivery.go): a chunk after the first, or a first
	// chunk whose local activity failed. Only then is the state
	// "delivering" published.
	SlowDelivery bool `json:"slow_delivery,omitempty"`
	// Shown is what the turn's streamed steps showed (runs with
	// changeStream): the preview the reply will replace, the blocks it
	// follows. Bounded by pipeline.Shown's own bounds; gone with the turn.
	Shown *pipeline.Shown `json:"shown,omitempty"`
	// Progress is where the turn's coroutine stands (turn_progress.go):
	// what a turn that waits for decisions or is parked needs to go on
	// in the next run.
	Progress *TurnProgress `json:"progress,omitempty"`
}

// Reaction is the reaction a user message should show, and when it is due
// to be cleared (zero while it must stay).
type Reaction struct {
	MessageID string                 `json:"message_id"`
	ThreadID  string                 `json:"thread_id,omitempty"`
	State     pipeline.ReactionState `json:"state"`
	ClearAt   time.Time              `json:"clear_at,omitzero"`
	// Shown is true once a state was sent to the platform (or is being
	// sent); a message never shown anything needs no clear.
	Shown bool `json:"shown,omitempty"`
	// RetryAt is when a state the platform failed to take is tried
	// again; Attempts counts the failures.
	RetryAt  time.Time `json:"retry_at,omitzero"`
	Attempts int       `json:"attempts,omitempty"`
}

// TurnRecord is what an operator needs to know about the latest turn.
type TurnRecord struct {
	TurnID     string   `json:"turn_id"`
	MessageIDs []string `json:"message_ids"`
	Model      string   `json:"model,omitempty"`
	// Fallback lists the failed attempts before the answer, "model: type".
	Fallback   []string  `json:"fallback,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	Steps      int       `json:"steps"`
	Chunks     int       `json:"chunks"`
	Delivered  int       `json:"delivered"`
	// Heartbeat marks a heartbeat turn.
	Heartbeat bool `json:"heartbeat,omitempty"`
	// Usage is what the turn's model steps cost, where the providers
	// said; ThinkIgnored that its model took no reasoning effort.
	Usage        *pipeline.Usage `json:"usage,omitempty"`
	ThinkIgnored bool            `json:"think_ignored,omitempty"`
}

// Duration is how long the turn took, or zero while it runs.
func (t TurnRecord) Duration() time.Duration {
	if t.FinishedAt.IsZero() {
		return 0
	}
	return t.FinishedAt.Sub(t.StartedAt)
}

// DeliveryRecord maps one delivered chunk to the platform's message ID.
type DeliveryRecord struct {
	TurnID            string `json:"turn_id"`
	Chunk             int    `json:"chunk"`
	PlatformMessageID string `json:"platform_message_id"`
}

// Counters are running totals, for operators and tests.
type Counters struct {
	Inbound     int `json:"inbound"`
	Duplicates  int `json:"duplicates"`
	Turns       int `json:"turns"`
	Dropped     int `json:"dropped"`
	Steered     int `json:"steered"`
	Interrupted int `json:"interrupted"`
	Commands    int `json:"commands"`
	Aborted     int `json:"aborted"`
	Denied      int `json:"denied"`
	Observed    int `json:"observed"`
	Gated       int `json:"gated"`
	// Resets counts context-overflow resets: a new transcript each.
	Resets int `json:"resets"`
	Runs   int `json:"runs"`
}

// RetiredParams start a chat session workflow from a run of this one:
// its key and the state it carried (the chat session's Params read the
// same JSON).
type RetiredParams struct {
	Session pipeline.SessionKey `json:"session"`
	Retired *State              `json:"retired,omitempty"`
}
