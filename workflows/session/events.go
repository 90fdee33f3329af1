package session

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Event is something that happened to the session. The loop routes each
// event to the parts that answer it (loop.go, route); an event is a plain
// value, so a part's answer to it is a pure function of its state.
type Event interface{ isEvent() }

// MessageArrived: a platform message reached the session (the inbound
// signal), before dedupe.
type MessageArrived struct{ In pipeline.Inbound }

// MessageAccepted: intake admitted a message (not a duplicate, not a
// claim code) for the parts that decide what it means.
type MessageAccepted struct{ In pipeline.Inbound }

// BatchReady: messages are ready for a turn: a debounce window closed,
// or a message that needs no window arrived.
type BatchReady struct{ Batch Batch }

// TimerFired: a timer the session armed (Arm) reached its time.
type TimerFired struct {
	Timer TimerID
	At    time.Time
}

// ModelAnswered: one model attempt of a turn's step finished.
type ModelAnswered struct {
	TurnID  string
	Step    int
	Model   string
	Result  pipeline.TurnResult
	Failure *Failure
}

// ToolRan: one tool call of a turn's step finished.
type ToolRan struct {
	TurnID string
	Step   int
	Result pipeline.ToolResult
}

// ChunkDelivered: a chunk of a reply was delivered, or its delivery
// failed for good (Failure is set).
type ChunkDelivered struct {
	TurnID    string
	Index     int
	Delivered pipeline.Delivered
	Failure   *Failure
}

// ReactionApplied: a reaction change reached the platform, or failed.
type ReactionApplied struct {
	Change  pipeline.ReactionChange
	Failure *Failure
}

// Returned: a Call effect's activity finished; Output holds its decoded
// result (of the Call's Output type) when Failure is nil.
type Returned struct {
	Key     string
	Output  any
	Failure *Failure
}

// DecisionTaken: a person decided a proposal (signal, update, button or
// command); the proposals part checked it.
type DecisionTaken struct{ Decision pipeline.Decision }

// HeartbeatTicked: a heartbeat schedule ticked for this session.
type HeartbeatTicked struct{ Tick pipeline.HeartbeatTick }

// TurnEnded: a turn finished, however it ended.
type TurnEnded struct{ Record TurnRecord }

// RetryAsked: an operator asked a parked delivery to go out again.
type RetryAsked struct{ By, Reason string }

// Disengaged: the agent answers again only when addressed.
type Disengaged struct{}

// FeedbackGiven: a user reacted to a message of the bot.
type FeedbackGiven struct{ Feedback pipeline.Feedback }

func (MessageArrived) isEvent()  {}
func (MessageAccepted) isEvent() {}
func (BatchReady) isEvent()      {}
func (TimerFired) isEvent()      {}
func (ModelAnswered) isEvent()   {}
func (ToolRan) isEvent()         {}
func (ChunkDelivered) isEvent()  {}
func (ReactionApplied) isEvent() {}
func (Returned) isEvent()        {}
func (DecisionTaken) isEvent()   {}
func (HeartbeatTicked) isEvent() {}
func (TurnEnded) isEvent()       {}
func (RetryAsked) isEvent()      {}
func (Disengaged) isEvent()      {}
func (FeedbackGiven) isEvent()   {}

// ReactionsWanted: a part wants messages to show State (dropped ones
// cleared, a forwarded batch 👀, a command ✅); the reactions part's
// React answers it.
type ReactionsWanted struct {
	Refs  []msgRef
	State pipeline.ReactionState
}

func (ReactionsWanted) isEvent() {}

// Failure is an effect's error as a value a part can inspect: the
// ApplicationError type ("RateLimited", "PlatformRejected", "Timeout",
// "Canceled", ...), whether Temporal may retry it, and its message.
type Failure struct {
	Type         string `json:"type"`
	NonRetryable bool   `json:"non_retryable,omitempty"`
	Message      string `json:"message"`
	// Cause is what the effect itself said (an application error's own
	// message, or which timeout ran out), without Temporal's wrapping:
	// what a model reads of a failed tool call.
	Cause      string        `json:"cause,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Shown is what a failed streaming attempt already showed.
	Shown *pipeline.Shown `json:"shown,omitempty"`
}

func (f *Failure) Error() string { return f.Type + ": " + f.Message }
