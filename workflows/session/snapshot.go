package session

import (
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// SnapshotOf is the answer to the state query: what an operator needs to
// understand a session, messages shown by ID and sender only. The CLI and
// the end-to-end tests decode it as a workflows.Snapshot, so it is built
// in those types; the parts' own record types that have the same fields
// are converted as they are, and a field added to one but not the other
// fails the build here.
func SnapshotOf(env Env, st *State, historyLength int) workflows.Snapshot {
	e := &st.Engagement
	c := &st.Control
	snap := workflows.Snapshot{
		Session:       env.Key,
		Status:        Status(env, st),
		Settings:      env.Settings,
		Queue:         st.Intake.QueueSettings(env),
		ModelOverride: st.Turn.Models.ModelOverride,
		Cooldowns:     convert(st.Turn.Models.Cooldowns, func(c Cooldown) workflows.Cooldown { return workflows.Cooldown(c) }),
		Proposals:     convert(st.Proposals.Proposals, func(p Proposal) workflows.Proposal { return workflows.Proposal(p) }),
		Activation:    e.Activation(env),
		Participants:  convert(e.Participants, func(p Participant) workflows.Participant { return workflows.Participant(p) }),
		Membership:    e.Membership,
		Sticky:        e.Sticky,
		ObservedCount: len(e.Observed),
		LoopGuard:     e.LoopGuard,
		LastDenied:    e.LastDenied,
		Buffers:       bufferViews(st.Intake.Buffers),
		Queued:        batchViews(st.Queue.Queue),
		Overflow:      overflowView(st.Queue.Overflow),
		Active:        activeView(&st.Turn),
		Reactions:     convert(st.Reactions.Reactions, reactionView),
		Pending:       st.Reactions.Changes,
		Deliveries:    convert(st.Turn.Deliveries, func(d DeliveryRecord) workflows.DeliveryRecord { return workflows.DeliveryRecord(d) }),
		Counters:      countersOf(st),
		TurnSeq:       st.Turn.Seq,
		SeenMessages:  len(st.Intake.Seen),
		LastInboundAt: st.Intake.LastInboundAt,
		Chat: &workflows.ChatView{
			Think: c.Think, Verbose: c.Verbose, Usage: c.UsageMode, Muted: c.Muted,
			UsageTotal: c.UsageTotal, IdleFrom: c.IdleFrom,
		},
		HistoryLength: historyLength,
		Held:          st.Turn.Held,
	}
	if t := st.Turn.Last; t != nil {
		rec := workflows.TurnRecord(*t)
		snap.LastTurn = &rec
	}
	if h := c.LastHeartbeat; h != nil {
		rec := workflows.HeartbeatRecord(*h)
		snap.Chat.LastHeartbeat = &rec
	}
	return snap
}

// countersOf gathers the counters each part keeps of what it did.
func countersOf(st *State) workflows.Counters {
	q, e := &st.Queue, &st.Engagement.Counts
	return workflows.Counters{
		Inbound:     st.Intake.Inbound,
		Duplicates:  st.Intake.Duplicates,
		Turns:       st.Turn.Seq,
		Dropped:     q.Dropped,
		Steered:     q.Steered,
		Interrupted: q.Interrupted,
		Commands:    st.Replies.Commands,
		Aborted:     q.Aborted,
		Denied:      e.Denied,
		Observed:    e.Observed,
		Gated:       e.Gated,
		Resets:      st.Turn.Resets,
		Runs:        st.Counters.Runs,
	}
}

// convert maps a slice; nil stays nil, so an empty list is left out of
// the JSON where its field says omitempty.
func convert[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func reactionView(r Reaction) workflows.Reaction {
	return workflows.Reaction{
		MessageID: r.MessageID, ThreadID: r.ThreadID, State: r.State, ClearAt: r.ClearAt,
		Shown: r.Shown, RetryAt: r.RetryAt, Attempts: r.Attempts,
	}
}

// bufferViews are the open debounce windows; never nil, so the JSON
// shows an empty list.
func bufferViews(buffers []Buffer) []workflows.BufferView {
	out := make([]workflows.BufferView, 0, len(buffers))
	for _, b := range buffers {
		out = append(out, workflows.BufferView{Sender: b.Key.Sender, Thread: string(b.Key.Thread), MessageIDs: messageIDs(b.Messages), FlushAt: b.FlushAt})
	}
	return out
}

// batchViews are the queued batches; never nil, so the JSON shows an
// empty list.
func batchViews(queue []Batch) []workflows.BatchView {
	out := make([]workflows.BatchView, 0, len(queue))
	for _, b := range queue {
		view := workflows.BatchView{Mode: b.Queue.Mode, MessageIDs: messageIDs(b.Messages)}
		for _, m := range b.Messages {
			view.Senders = append(view.Senders, m.SenderID)
		}
		out = append(out, view)
	}
	return out
}

func overflowView(o *Overflow) *workflows.Overflow {
	if o == nil {
		return nil
	}
	return &workflows.Overflow{Dropped: o.Dropped, Summaries: o.Summaries, MessageIDs: idsOf(o.Refs)}
}

// activeView is the running turn; its start is its record's, which the
// turn keeps from its beginning.
func activeView(t *TurnState) *workflows.ActiveView {
	a := t.Active
	if a == nil {
		return nil
	}
	view := &workflows.ActiveView{
		TurnID: a.TurnID, Phase: a.Phase, Step: a.Step, MessageIDs: messageIDs(a.Messages),
		Interrupted: a.Stopped == "interrupted",
	}
	if len(a.Steered) > 0 {
		view.Steered = messageIDs(a.Steered)
	}
	if t.Last != nil && t.Last.TurnID == a.TurnID {
		view.StartedAt = t.Last.StartedAt
	}
	return view
}

func messageIDs(msgs []pipeline.Inbound) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MessageID
	}
	return out
}
