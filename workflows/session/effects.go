package session

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Effect is something a part wants done. Only the runner (runner.go)
// does it; its outcome, if it has one, comes back as an event.
type Effect interface{ isEffect() }

// TimerID names an armed timer; arming it again moves it.
type TimerID string

// Arm starts (or moves) a durable timer that fires TimerFired at At.
type Arm struct {
	Timer   TimerID
	At      time.Time
	Summary string
}

// Disarm cancels a timer; it never fires.
type Disarm struct{ Timer TimerID }

// Emit hands an event to the loop, for another part to answer, before
// the loop waits again.
type Emit struct{ Event Event }

// ApplyReaction sets one reaction (a local activity, one attempt);
// ReactionApplied answers.
type ApplyReaction struct{ Change pipeline.ReactionChange }

// AskModel runs one model attempt of a turn's step (the AgentTurn
// activity); ModelAnswered answers.
type AskModel struct {
	TurnID  string
	Request pipeline.TurnRequest
}

// RunTool runs one tool call (the RunTool activity); ToolRan answers.
type RunTool struct {
	TurnID     string
	Step       int
	Invocation pipeline.ToolInvocation
}

// Deliver sends one chunk of a reply. Fast delivers it in a local
// activity with one attempt, for the first chunk of a reply; otherwise it
// is an activity retried until the delivery deadline. ChunkDelivered
// answers.
type Deliver struct {
	TurnID   string
	Delivery pipeline.Delivery
	Fast     bool
}

// Call runs any other activity of the contract (pipeline.Activity*):
// settings, claims, feedback, transcript commands, heartbeat operations,
// proposal edits. Returned answers with Key, its Output decoded into a
// new value of Output's type.
type Call struct {
	Key      string
	Activity string
	Args     []any
	Output   any
	Local    bool
	Summary  string
	// Timeout is the start-to-close timeout (activities) or the local
	// activity's; zero takes the runner's default.
	Timeout time.Duration
	// Attempts bounds the tries, all within Timeout when it is 1 (a call
	// whose answer is only worth having at once, like the gate's); zero
	// takes the runner's default, defaultCallAttempts.
	Attempts int32
}

// Cancel cancels every effect started for a turn (its model step, its
// tools); their events come back with a "Canceled" failure.
type Cancel struct{ TurnID string }

// Publish upserts the session's search attributes to what the state shows.
type Publish struct{}

func (Arm) isEffect()           {}
func (Disarm) isEffect()        {}
func (Emit) isEffect()          {}
func (ApplyReaction) isEffect() {}
func (AskModel) isEffect()      {}
func (RunTool) isEffect()       {}
func (Deliver) isEffect()       {}
func (Call) isEffect()          {}
func (Cancel) isEffect()        {}
func (Publish) isEffect()       {}
