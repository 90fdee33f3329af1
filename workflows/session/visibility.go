package session

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// Visibility is what people see of a session: its status, the search
// attributes operators and adapters query, the current details the
// Temporal UI shows, the state query's snapshot and /status. All of it is
// read from the parts' states; nothing here changes them.

// Status is where the session stands. A running turn decides it: waiting
// for approvals, parked, delivering (only once the delivery left the
// fast path), or else thinking. Without one, the gate model being asked
// is gating, and an open debounce window (or a gated batch waiting for
// its own) is debouncing.
func Status(_ Env, st *State) workflows.Status {
	if a := st.Turn.Active; a != nil {
		switch {
		case a.Phase == PhaseWaiting:
			return workflows.StatusWaitingUser
		case a.Phase == PhaseParked:
			return workflows.StatusDeliveryFailed
		case a.Phase == PhaseDelivering && slowDelivery(a):
			return workflows.StatusDelivering
		}
		return workflows.StatusThinking
	}
	switch {
	case st.Engagement.Busy():
		return workflows.StatusGating
	case st.Intake.Holding() || st.Engagement.GatePending():
		return workflows.StatusDebouncing
	}
	return workflows.StatusIdle
}

// slowDelivery reports whether the reply left the fast path: its first
// chunk's one local attempt failed, or a later chunk is out, which goes as
// an activity retried until the delivery deadline.
func slowDelivery(a *ActiveTurn) bool { return a.Slow || a.Next > 0 }

// searchableStatus is the status the ReplyflowState search attribute
// shows. Every change of a search attribute is an upsert: a history event
// and a billable action. So the attribute shows only the states an
// operator can act on or that can last, and the states that end by
// themselves within a bounded time show as idle:
//
//   - a debounce window closes on its timer, within
//     REPLYFLOW_DEBOUNCE_MAX_WAIT;
//   - a gate check ends within REPLYFLOW_GATE_TIMEOUT;
//   - a turn's first model step (one attempt of the first model) ends
//     within the turn timeout, and the fast delivery of its answer within
//     the fast delivery's one local attempt.
//
// A simple turn thus upserts nothing of its own; the state query and the
// UI's current details still show it thinking. Anything that can last
// shows: tools running, a fallback or a wait for a model, a second step
// (thinking), approvals (waiting_user), a slow delivery (delivering), a
// parked reply (delivery_failed). `replyflow sessions --stuck` finds
// those.
func searchableStatus(env Env, st *State) workflows.Status {
	switch status := Status(env, st); status {
	case workflows.StatusDebouncing, workflows.StatusGating:
		return workflows.StatusIdle
	case workflows.StatusThinking:
		if quickTurn(st.Turn.Active) {
			return workflows.StatusIdle
		}
		return status
	default:
		return status
	}
}

// quickTurn reports whether a turn has done nothing yet that can last: it
// asks the first model of its first step (no failed attempt, no lost
// worker, no wait), or delivers that step's answer on the fast path.
func quickTurn(a *ActiveTurn) bool {
	if a.Calls != nil || len(a.Rounds) > 0 || a.Waiting != nil || len(a.Attempts.Failed) > 0 || a.Attempts.Losses > 0 {
		return false
	}
	switch a.Phase {
	case PhaseModel:
		return a.Step == 0
	case PhaseDelivering:
		return a.Step <= 1 && !slowDelivery(a)
	}
	return false
}

// VisibilityState is what the search attributes last said, so only
// changes are upserted. It lives in the loop, not in State: a new run
// publishes everything again at its first publish (an attribute update
// of the previous run may not have been the last word, and it costs one
// upsert a run).
type VisibilityState struct {
	// Published is nil until the run's first publish.
	Published *PublishedAttributes
}

// PublishedAttributes are the search attributes' values as last upserted.
type PublishedAttributes struct {
	State            workflows.Status
	QueueDepth       int
	PendingProposals int
	LastInboundAt    time.Time
	Held             pipeline.Hold
}

// Updates are the search attributes that changed since the last publish,
// for one upsert (none when nothing changed); the loop calls it after
// every pass of events. The run's first publish sets them all, with the
// session's channel and chat.
//
// LastInboundAt goes with any upsert there is. With none, it is upserted
// on its own, once a pass, unless the session is in a state that passes
// by itself and shows as idle (a debounce window, the gate, a turn's
// first model step and its fast delivery): then it waits for the state
// that follows, and a turn that goes on to tools publishes it with
// thinking, a quick one alone once it ends. Adapters catch up from it
// after a restart (messages newer than it are fetched again, and the
// session drops what it has seen), so it is never held longer than a
// turn's first step.
func (v *VisibilityState) Updates(env Env, st *State) []temporal.SearchAttributeUpdate {
	var updates []temporal.SearchAttributeUpdate
	first := v.Published == nil
	was := PublishedAttributes{}
	if first {
		updates = append(updates, workflows.AttrChannel.ValueSet(env.Key.Channel), workflows.AttrChat.ValueSet(env.Key.Chat))
	} else {
		was = *v.Published
	}
	now := PublishedAttributes{
		State:            searchableStatus(env, st),
		QueueDepth:       len(st.Queue.Queue),
		PendingProposals: st.Proposals.Pending(),
		LastInboundAt:    was.LastInboundAt,
		Held:             heldOf(st),
	}
	if first || now.State != was.State {
		updates = append(updates, workflows.AttrState.ValueSet(string(now.State)))
	}
	if first || now.QueueDepth != was.QueueDepth {
		updates = append(updates, workflows.AttrQueueDepth.ValueSet(int64(now.QueueDepth)))
	}
	if first || now.PendingProposals != was.PendingProposals {
		updates = append(updates, workflows.AttrPendingProposals.ValueSet(int64(now.PendingProposals)))
	}
	if now.Held != was.Held {
		// Not at a run's first publish unless held: a session never held
		// upserts nothing for it.
		if now.Held.Until.IsZero() {
			updates = append(updates, workflows.AttrHeldUntil.ValueUnset(), workflows.AttrHeldReason.ValueUnset())
		} else {
			updates = append(updates, workflows.AttrHeldUntil.ValueSet(now.Held.Until), workflows.AttrHeldReason.ValueSet(now.Held.Reason))
		}
	}
	if last := st.Intake.LastInboundAt; !last.IsZero() && !last.Equal(was.LastInboundAt) && (len(updates) > 0 || !passesByItself(env, st)) {
		updates = append(updates, workflows.AttrLastInboundAt.ValueSet(last))
		now.LastInboundAt = last
	}
	v.Published = &now
	return updates
}

// heldOf is the session's hold, the zero Hold when it has none.
func heldOf(st *State) pipeline.Hold {
	if h := st.Turn.Held; h != nil {
		return *h
	}
	return pipeline.Hold{}
}

// passesByItself reports whether the session's status is one that the
// search attributes show as idle.
func passesByItself(env Env, st *State) bool {
	return Status(env, st) != searchableStatus(env, st)
}

// Details is the markdown the Temporal UI shows as the session's current
// details.
func Details(env Env, st *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · state `%s` · queue %d · mode `%s`\n\n",
		env.Key.WorkflowID(), Status(env, st), len(st.Queue.Queue), st.Intake.QueueSettings(env).Mode)
	if a := st.Turn.Active; a != nil {
		fmt.Fprintf(&b, "- running turn `%s` (%s, step %d, %d message(s))\n", a.TurnID, a.Phase, a.Step+1, len(a.Messages))
	}
	for _, buf := range st.Intake.Buffers {
		fmt.Fprintf(&b, "- debounce: %d message(s) from %s in thread %s, flush at %s\n",
			len(buf.Messages), buf.Key.Sender, buf.Key.Thread, buf.FlushAt.Format(time.RFC3339))
	}
	if e := &st.Engagement; len(e.GateBuffer) > 0 {
		fmt.Fprintf(&b, "- gate: %d message(s) waiting, asked at %s\n", len(e.GateBuffer), e.GateFlushAt.Format(time.RFC3339))
	}
	if n := len(st.Engagement.GateCalls); n > 0 {
		fmt.Fprintf(&b, "- gate: asking about %d batch(es)\n", n)
	}
	for _, r := range st.Reactions.Reactions {
		if !r.ClearAt.IsZero() {
			fmt.Fprintf(&b, "- clear %s on %s at %s\n", pipeline.DefaultEmoji[r.State], r.MessageID, r.ClearAt.Format(time.RFC3339))
		}
	}
	if t := st.Turn.Last; t != nil {
		fmt.Fprintf(&b, "\nlast turn `%s`: %s", t.TurnID, t.Outcome)
		if t.Error != "" {
			b.WriteString(" — " + t.Error)
		}
	}
	return b.String()
}

// StatusInfo is what /status shows: the model the next turn asks first
// (or the last turn's, with the failed attempts before it), the queue,
// the status, the last turn's outcome and time, the heartbeat and /send.
func StatusInfo(env Env, st *State) pipeline.StatusInfo {
	info := pipeline.StatusInfo{
		Session:    env.Key.WorkflowID(),
		Model:      PrimaryModel(env, st),
		Queue:      st.Intake.QueueSettings(env),
		QueueDepth: len(st.Queue.Queue),
		State:      string(Status(env, st)),
		TurnsTotal: st.Turn.Seq,
		Heartbeat:  st.Control.HeartbeatLine(),
		Muted:      st.Control.Muted,
	}
	if t := st.Turn.Last; t != nil {
		if t.Model != "" {
			info.Model = t.Model
			info.Fallback = strings.Join(t.Fallback, ", ")
		}
		if !t.FinishedAt.IsZero() {
			info.LastOutcome, info.LastTurn = t.Outcome, t.FinishedAt.Sub(t.StartedAt)
		}
	}
	return info
}

// PrimaryModel is the model a step asks first: the running turn's own
// /model directive, else the chat's /model choice, else the chain's first.
func PrimaryModel(env Env, st *State) string {
	turnModel := ""
	if a := st.Turn.Active; a != nil {
		turnModel = a.Attempts.TurnModel
	}
	if chain, _ := st.Turn.Models.Chain(env, turnModel); len(chain) > 0 {
		return chain[0]
	}
	return ""
}
