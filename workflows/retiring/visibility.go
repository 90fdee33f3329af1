package retiring

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// visibility is the part that shows the session to people: it keeps
// State.Status and what the search attributes last said, publishes what
// changed once per main-loop step (search attributes and the UI's current
// details), and answers the state query and /status. It reads every
// part's state through the State and the callbacks below, and changes
// nothing but Status.
type visibility struct {
	*runEnv
	st               *State
	published        published
	gating           func() bool
	pendingProposals func() int
	activation       func() string
	queueSettings    func() pipeline.QueueSettings
	primaryModel     func() string
	heartbeatLine    func() string
}

// published is what the search attributes last said, so only changes are
// upserted (each upsert is a history event).
type published struct {
	status    Status
	depth     int
	proposals int
	last      time.Time
}

// currentStatus derives the session's status from its state.
func (s *visibility) currentStatus() Status {
	if a := s.st.Active; a != nil {
		switch a.Phase {
		case PhaseWaiting:
			return StatusWaitingUser
		case PhaseDelivering:
			if s.v.cost && !a.SlowDelivery {
				break // the fast path: still "thinking" (delivery.go)
			}
			return StatusDelivering
		case PhaseParked:
			return StatusDeliveryFailed
		}
		return StatusThinking
	}
	if s.gating() {
		return StatusGating
	}
	if len(s.st.Buffers) > 0 || len(s.st.GateBuffer) > 0 {
		return StatusDebouncing
	}
	return StatusIdle
}

func (s *visibility) updateStatus() {
	if st := s.currentStatus(); st != s.st.Status {
		s.st.Status = st
		s.attrsDirty = true
	}
}

// searchable is the state the search attributes show for status. Runs
// with changeCost do not publish the states that pass by themselves
// within seconds: a debounce window (it closes on its timer, at most
// REPLYFLOW_DEBOUNCE_MAX_WAIT) and a gate check (bounded by
// REPLYFLOW_GATE_TIMEOUT) show as idle there, and stay visible in the
// state query and the UI's current details. A run without changeCost
// upserts every state change, one billable action each, several a turn.
func (s *visibility) searchable(status Status) Status {
	if s.v.cost && (status == StatusDebouncing || status == StatusGating) {
		return StatusIdle
	}
	return status
}

// publish upserts the search attributes that changed, in one event, and
// refreshes the current details shown in the UI.
func (s *visibility) publish() {
	if !s.attrsDirty {
		return
	}
	s.attrsDirty = false
	var updates []temporal.SearchAttributeUpdate
	first := s.published.status == ""
	if first {
		updates = append(updates, AttrChannel.ValueSet(s.key.Channel), AttrChat.ValueSet(s.key.Chat))
	}
	status := s.searchable(s.st.Status)
	if pending := s.pendingProposals(); first || pending != s.published.proposals {
		updates = append(updates, AttrPendingProposals.ValueSet(int64(pending)))
	}
	if s.published.status != status {
		updates = append(updates, AttrState.ValueSet(string(status)))
	}
	if depth := len(s.st.Queue); first || depth != s.published.depth {
		updates = append(updates, AttrQueueDepth.ValueSet(int64(depth)))
	}
	last := s.published.last
	if !s.st.LastInboundAt.IsZero() && !s.st.LastInboundAt.Equal(last) {
		// With changeCost, a message that opens a turn soon (a debounce
		// window, a gate check) has its time published with the turn's
		// state, in one upsert instead of two.
		if !s.v.cost || len(updates) > 0 || s.st.Status == s.searchable(s.st.Status) {
			updates = append(updates, AttrLastInboundAt.ValueSet(s.st.LastInboundAt))
			last = s.st.LastInboundAt
		}
	}
	s.published = published{status: status, depth: len(s.st.Queue), proposals: s.pendingProposals(), last: last}
	if len(updates) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(s.ctx, updates...); err != nil {
			s.log.Warn("Search attributes not updated; is the namespace missing replyflow's attributes? See deploy/README.md", "error", err)
		}
	}
	workflow.SetCurrentDetails(s.ctx, s.details())
}

// details is the markdown the Temporal UI shows as the current details.
func (s *visibility) details() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · state `%s` · queue %d · mode `%s`\n\n", s.key.WorkflowID(), s.st.Status, len(s.st.Queue), s.queueSettings().Mode)
	if a := s.st.Active; a != nil {
		fmt.Fprintf(&b, "- running turn `%s` (%s, step %d, %d message(s))\n", a.TurnID, a.Phase, a.Step+1, len(a.Messages))
	}
	for _, buf := range s.st.Buffers {
		fmt.Fprintf(&b, "- debounce: %d message(s) from %s in thread %s, flush at %s\n", len(buf.Messages), buf.Key.Sender, buf.Key.Thread, buf.FlushAt.Format(time.RFC3339))
	}
	for _, r := range s.st.Reactions {
		if !r.ClearAt.IsZero() {
			fmt.Fprintf(&b, "- clear %s on %s at %s\n", pipeline.DefaultEmoji[r.State], r.MessageID, r.ClearAt.Format(time.RFC3339))
		}
	}
	if t := s.st.LastTurn; t != nil {
		fmt.Fprintf(&b, "\nlast turn `%s`: %s", t.TurnID, t.Outcome)
		if t.Error != "" {
			b.WriteString(" — " + t.Error)
		}
	}
	return b.String()
}

func (s *visibility) snapshot() (Snapshot, error) {
	snap := Snapshot{
		Session: s.key, Status: s.currentStatus(), Settings: s.settings, Queue: s.queueSettings(),
		ModelOverride: s.st.ModelOverride, Cooldowns: s.st.Cooldowns, Proposals: s.st.Proposals,
		Activation: s.activation(), Participants: s.st.Participants, Sticky: s.st.Sticky, ObservedCount: len(s.st.Observed),
		LoopGuard: s.st.LoopGuard, LastDenied: s.st.LastDenied, Membership: s.st.Membership,
		Buffers: []BufferView{}, Queued: []BatchView{}, Overflow: s.st.Overflow,
		Reactions: s.st.Reactions, Pending: s.st.ReactionChanges, LastTurn: s.st.LastTurn,
		Deliveries: s.st.Deliveries, Counters: s.st.Counters, TurnSeq: s.st.TurnSeq,
		SeenMessages: len(s.st.Seen), LastInboundAt: s.st.LastInboundAt,
		HistoryLength: workflow.GetInfo(s.ctx).GetCurrentHistoryLength(),
	}
	if s.v.control {
		c := s.st.ControlState
		snap.Chat = &ChatView{Think: c.Think, Verbose: c.Verbose, Usage: c.UsageMode, Muted: c.Muted,
			UsageTotal: c.UsageTotal, LastHeartbeat: c.LastHeartbeat, IdleFrom: c.IdleFrom}
	}
	for _, b := range s.st.Buffers {
		snap.Buffers = append(snap.Buffers, BufferView{Sender: b.Key.Sender, Thread: string(b.Key.Thread), MessageIDs: messageIDs(b.Messages), FlushAt: b.FlushAt})
	}
	for _, b := range s.st.Queue {
		view := BatchView{Mode: b.Queue.Mode, MessageIDs: messageIDs(b.Messages)}
		for _, m := range b.Messages {
			view.Senders = append(view.Senders, m.SenderID)
		}
		snap.Queued = append(snap.Queued, view)
	}
	if a := s.st.Active; a != nil {
		snap.Active = &ActiveView{TurnID: a.TurnID, Phase: a.Phase, Step: a.Step, MessageIDs: messageIDs(a.Messages),
			Steered: messageIDs(append(a.Steered, a.SteeredBacklog...)), Interrupted: a.Interrupted, StartedAt: a.StartedAt}
	}
	return snap, nil
}

func messageIDs(msgs []pipeline.Inbound) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MessageID
	}
	return out
}

// statusInfo is what /status shows.
func (s *visibility) statusInfo() pipeline.StatusInfo {
	info := pipeline.StatusInfo{
		Session:    s.key.WorkflowID(),
		Model:      s.primaryModel(),
		Queue:      s.queueSettings(),
		QueueDepth: len(s.st.Queue),
		State:      string(s.currentStatus()),
		TurnsTotal: s.st.Counters.Turns,
	}
	if s.v.control {
		info.Heartbeat = s.heartbeatLine()
		info.Muted = s.st.Muted
	}
	if t := s.st.LastTurn; t != nil {
		if t.Model != "" {
			info.Model = t.Model
			info.Fallback = strings.Join(t.Fallback, ", ")
		}
		if !t.FinishedAt.IsZero() {
			info.LastOutcome, info.LastTurn = t.Outcome, t.Duration()
		}
	}
	return info
}
