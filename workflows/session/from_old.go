package session

import (
	"slices"
	"time"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// FromOld is the state a session carried out of the old session workflow
// (package workflows) in this package's shape, for the run that continues
// it as new. It is pure: it reads old and changes nothing in it, shares
// no slice with it (the parts append to and filter their slices in
// place), and needs neither the clock nor the settings.
//
// The old run continues as new only at a quiet point or with a turn it
// can carry (its session.mayCarry): then no model step, tool, delivery,
// reaction change, direct reply, gate call or heartbeat read is under
// way, so nothing in flight is lost here. What a part starts again in a
// new run (timers, the first queued reaction change) its Resume does;
// FromOldResume does what the old run left to the end of a carried
// turn's wait.
//
// Each part's function below says where each old field goes. Not
// carried, and why:
//   - Status: the search attributes are recomputed by the first Publish.
//   - RepliesState.Replies: the old run never continues as new with a
//     direct reply being delivered (replies.busy), and this package has
//     no way to resume one: one carried would hold continue-as-new
//     forever (RepliesState.Busy).
//   - A turn that is not at a carriable point (see carriable): it never
//     reaches here; if one does, it ends (endUncarried).
func FromOld(old *workflows.State) *State {
	if old == nil {
		return &State{}
	}
	st := &State{
		Intake:     intakeFromOld(old),
		Engagement: engagementFromOld(old),
		Queue:      queueFromOld(old),
		Turn:       turnFromOld(old),
		Reactions:  reactionsFromOld(old),
		Proposals:  proposalsFromOld(old),
		Control:    controlFromOld(old.ControlState),
		// Notices numbers the notices' idempotency keys
		// ("<workflow>/reply/<message>/notice-<n>", the same in both
		// packages): it goes on from the old count, so a new notice
		// never takes the key of an old one.
		Replies: RepliesState{Notices: old.Notices, Commands: old.Counters.Commands},
		// The totals as the old state query showed them. Each part of
		// this package also counts its own (its function below sets them
		// from the same totals), so whichever the state query reads
		// starts from them. A conversion, not a copy field by field: it
		// stops compiling when the two Counters part ways.
		Counters: Counters(old.Counters),
	}
	if a := old.Active; a != nil {
		if carriable(a) {
			st.Engagement.DisengagedTurn = disengagedTurnFromOld(old)
		} else {
			st.endUncarried(old)
		}
	}
	return st
}

// carriable is the old run's own rule for a turn it carries across
// continue-as-new (turns.carriable): waiting for decisions with its step
// recorded, or parked with its chunks, and neither stopped nor asked to
// retry already.
func carriable(a *workflows.ActiveTurn) bool {
	p := a.Progress
	if p == nil || a.Aborted || a.Interrupted {
		return false
	}
	switch a.Phase {
	case workflows.PhaseWaiting:
		return p.Waiting != nil
	case workflows.PhaseParked:
		return !a.RetryRequested && len(p.Chunks) > 0
	}
	return false
}

// intakeFromOld: Seen (each ID as this package keys it: a long ID by its
// hash, which a digest already is), Buffers (timer generations and all),
// BufferSeq (so a new window's timer is never an old one's), the /queue
// override, LastInboundAt, and the Inbound and Duplicates counts.
func intakeFromOld(old *workflows.State) IntakeState {
	s := IntakeState{
		BufferSeq:     old.BufferSeq,
		LastInboundAt: old.LastInboundAt,
		Inbound:       old.Counters.Inbound,
		Duplicates:    old.Counters.Duplicates,
	}
	if old.QueueOverride != nil {
		patch := *old.QueueOverride
		s.QueueOverride = &patch
	}
	s.Seen = convertCarried(old.Seen, func(e workflows.SeenMessage) SeenMessage { return SeenMessage{ID: seenKey(e.ID), At: e.At} })
	s.Buffers = convertCarried(old.Buffers, func(b workflows.Buffer) Buffer {
		return Buffer{Key: b.Key, Messages: carry(b.Messages), FirstAt: firstAt(b.FirstAt, b.FlushAt), FlushAt: b.FlushAt, Gen: b.Gen}
	})
	return s
}

// firstAt is when a carried window opened. Windows carried from runs
// without the maximum wait have none; the old run counted it from its
// resume, which this pure function cannot read, so it counts from the
// window's planned close: later messages hold it at most the maximum
// wait after that.
func firstAt(first, flush time.Time) time.Time {
	if first.IsZero() {
		return flush
	}
	return first
}

// engagementFromOld: participants, sticky credits, the observed messages,
// the loop guard, the bot's threads, the /activation override, the last
// denied message, the member count, and the gated batch with its window
// and generation (a batch being asked about holds the old run back, so
// none is). A gate window's times go with its batch: the old run left
// them set after the batch went. The Denied, Observed and Gated counts
// go to Counts. DisengagedTurn is set by FromOld (disengagedTurnFromOld).
func engagementFromOld(old *workflows.State) EngagementState {
	s := EngagementState{
		Participants:       convertCarried(old.Participants, func(p workflows.Participant) Participant { return Participant(p) }),
		Sticky:             carry(old.Sticky),
		Observed:           carry(old.Observed),
		LoopGuard:          old.LoopGuard,
		BotThreads:         carry(old.BotThreads),
		ActivationOverride: old.ActivationOverride,
		LastDenied:         old.LastDenied,
		GateSeq:            old.GateSeq,
		Counts:             EngagementCounts{Denied: old.Counters.Denied, Observed: old.Counters.Observed, Gated: old.Counters.Gated},
	}
	s.LoopGuard.Recent = carry(old.LoopGuard.Recent)
	if m := old.Membership; m != nil {
		count := *m
		s.Membership = &count
	}
	if len(old.GateBuffer) > 0 {
		s.GateBuffer = carry(old.GateBuffer)
		s.GateFirstAt, s.GateFlushAt = firstAt(old.GateFirstAt, old.GateFlushAt), old.GateFlushAt
	}
	return s
}

// disengagedTurnFromOld is the turn whose reply grants no sticky credit.
// The old state names it by number (the turn sequence when the agent
// disengaged); this package by ID. Only the carried turn can still
// reply, so only it is named: when it was the turn running at the time.
func disengagedTurnFromOld(old *workflows.State) string {
	if old.DisengagedTurn != 0 && old.DisengagedTurn == old.TurnSeq {
		return old.Active.TurnID
	}
	return ""
}

// queueFromOld: the queued batches (settings and directives each), the
// summarize overflow, AbortedLastRun and NewTranscript, and the Dropped,
// Steered, Interrupted and Aborted counts.
//
// The overflow's messages are named by ID in the old state, and their
// reactions followed the next turn only where the reactions part tracked
// them (it gave their thread); this package keeps refs, so the tracked
// ones are kept with their thread, as the old next turn would have taken
// them.
func queueFromOld(old *workflows.State) QueueState {
	s := QueueState{
		Queue:          convertCarried(old.Queue, batchFromOld),
		AbortedLastRun: old.AbortedLastRun,
		NewTranscript:  old.NewTranscript,
		Dropped:        old.Counters.Dropped,
		Steered:        old.Counters.Steered,
		Interrupted:    old.Counters.Interrupted,
		Aborted:        old.Counters.Aborted,
	}
	if o := old.Overflow; o != nil {
		s.Overflow = &Overflow{Dropped: o.Dropped, Summaries: carry(o.Summaries)}
		for _, id := range o.MessageIDs {
			if i := slices.IndexFunc(old.Reactions, func(r workflows.Reaction) bool { return r.MessageID == id }); i >= 0 {
				s.Overflow.Refs = append(s.Overflow.Refs, msgRef{ID: id, Thread: old.Reactions[i].ThreadID})
			}
		}
	}
	return s
}

func batchFromOld(b workflows.Batch) Batch {
	out := Batch(b)
	out.Messages = carry(b.Messages)
	if b.Directives != nil {
		d := *b.Directives
		out.Directives = &d
	}
	return out
}

// turnFromOld: the turn sequence (this package's turn IDs,
// "<workflow>/<seq>", never take an old one's, "<first run>.<seq>"), the
// latest turn's record, the delivery ledger, the /model override and the
// cooldowns, the Resets count, and a carried turn (activeFromOld).
func turnFromOld(old *workflows.State) TurnState {
	s := TurnState{
		Seq:        old.TurnSeq,
		Deliveries: convertCarried(old.Deliveries, func(d workflows.DeliveryRecord) DeliveryRecord { return DeliveryRecord(d) }),
		Models: ModelsState{
			ModelOverride: old.ModelOverride,
			Cooldowns:     convertCarried(old.Cooldowns, func(c workflows.Cooldown) Cooldown { return Cooldown(c) }),
		},
		Resets: old.Counters.Resets,
	}
	if r := old.LastTurn; r != nil {
		s.Last = recordFromOld(*r)
	}
	if a := old.Active; a != nil && carriable(a) {
		s.Active = activeFromOld(old, a)
		if s.Last == nil || s.Last.TurnID != a.TurnID {
			// As the old run's resumeTurn: the turn's own record.
			s.Last = &TurnRecord{TurnID: a.TurnID, MessageIDs: idsOf(s.Active.Refs), StartedAt: a.StartedAt, Outcome: "running", Heartbeat: a.Heartbeat != ""}
		}
	}
	return s
}

func recordFromOld(r workflows.TurnRecord) *TurnRecord {
	out := TurnRecord(r)
	out.MessageIDs, out.Fallback = carry(r.MessageIDs), carry(r.Fallback)
	if r.Usage != nil {
		u := *r.Usage
		out.Usage = &u
	}
	return &out
}

// activeFromOld is a carried turn. It keeps its old TurnID: its
// proposals name it, and its deliveries' idempotency keys
// ("<workflow>/<turn>/<chunk>", the same in both packages) are made of
// it, so a chunk that may have reached the platform is not sent twice.
//
// From the old turn: Messages, Phase (the same names), Step, NoAnchor,
// Options, Heartbeat, Shown (as Attempts.Shown), SlowDelivery (as Slow),
// and Steered, with SteeredBacklog too for a waiting turn, whose next
// step takes them (backlog messages are queued as well, as this
// package's steer-backlog keeps them). A parked turn has no next step,
// and its backlog messages are queued already: it takes none.
// From its progress: Text, Refs, Rounds, Reset (as Attempts.Reset),
// Chunks and Next, and the waiting step's round and decisions
// (decisionsFromOld).
//
// Not carried: Progress.Anchor. The old turn answers the last message
// of its own batch even after steered messages joined it; this package
// answers the turn's newest message (the same thread: only messages of
// the turn's thread are steered in).
func activeFromOld(old *workflows.State, a *workflows.ActiveTurn) *ActiveTurn {
	p := a.Progress
	out := &ActiveTurn{
		TurnID:    a.TurnID,
		Messages:  carry(a.Messages),
		Text:      p.Text,
		Phase:     a.Phase,
		Step:      a.Step,
		NoAnchor:  a.NoAnchor,
		Heartbeat: a.Heartbeat,
		Rounds:    convertCarried(p.Rounds, cloneRound),
		Steered:   carry(a.Steered),
		Chunks:    carry(p.Chunks),
		Next:      p.Next,
		Slow:      a.SlowDelivery,
	}
	for _, r := range p.Refs {
		out.Refs = append(out.Refs, msgRef{ID: r.ID, Thread: r.Thread})
	}
	if a.Options != nil {
		out.Options = TurnOptions(*a.Options)
	}
	out.Attempts = StepAttempts{TurnModel: out.Options.Model, Reset: p.Reset}
	if a.Shown != nil {
		shown := *a.Shown
		shown.Blocks = carry(a.Shown.Blocks)
		out.Attempts.Shown = &shown
	}
	if r := old.LastTurn; r != nil && r.TurnID == a.TurnID {
		out.Attempts.Failed = carry(r.Fallback[max(len(r.Fallback)-maxRecordedFailures, 0):])
	}
	if w := p.Waiting; a.Phase == workflows.PhaseWaiting && w != nil {
		out.SteeredBacklog = carry(a.SteeredBacklog)
		round := cloneRound(w.Round)
		out.Calls = &round
		out.Decisions = decisionsFromOld(old, a.TurnID, w)
	}
	return out
}

func cloneRound(r pipeline.ToolRound) pipeline.ToolRound {
	return pipeline.ToolRound{Text: r.Text, Calls: carry(r.Calls), Results: carry(r.Results)}
}

// decisionsFromOld is where each call of a waiting step that needs
// approval stands, read from its proposal: pending, approved, or
// refused (rejected or expired) with the result the model reads, the
// same words the old run's close gives. A call whose proposal is gone
// (the old run never prunes a waiting turn's) is refused, so the turn
// cannot wait for it forever.
func decisionsFromOld(old *workflows.State, turnID string, w *workflows.WaitingStep) []CallDecision {
	var out []CallDecision
	for _, cp := range w.Proposals {
		d := CallDecision{CallID: cp.CallID}
		i := slices.IndexFunc(old.Proposals, func(p workflows.Proposal) bool { return p.ID == cp.ProposalID })
		decided := ProposalDecided{TurnID: turnID, ProposalID: cp.ProposalID, CallID: cp.CallID, DecidedBy: sessionDecider, Reason: "its proposal was not carried"}
		if c := slices.IndexFunc(w.Round.Calls, func(c pipeline.ToolCall) bool { return c.ID == cp.CallID }); c >= 0 {
			decided.Tool = w.Round.Calls[c].Name
		}
		if i >= 0 {
			p := old.Proposals[i]
			decided.Approved, decided.Expired = p.Status == ProposalApproved, p.Status == ProposalExpired
			decided.DecidedBy, decided.Reason = p.DecidedBy, p.Reason
			if p.Status == ProposalPending {
				out = append(out, d)
				continue
			}
		}
		d.Decided = true
		if refused, ok := decided.Refused(); ok {
			d.Refused = &refused
		}
		out = append(out, d)
	}
	return out
}

// reactionsFromOld: every tracked reaction (owed clears with their
// ClearAt, retries with RetryAt and Attempts) and the changes not yet
// applied, in order. None is being applied (the old run waits for it),
// and the clear timer is armed by Resume, so Applying and ClearArmedAt
// start clear; nothing is carried on a chunk (Carried, Held): the last
// chunk of a parked turn carries its reactions again when it goes out.
func reactionsFromOld(old *workflows.State) ReactionsState {
	return ReactionsState{
		Reactions: convertCarried(old.Reactions, func(r workflows.Reaction) Reaction {
			return Reaction{MessageID: r.MessageID, ThreadID: r.ThreadID, State: r.State, Shown: r.Shown, ClearAt: r.ClearAt, RetryAt: r.RetryAt, Attempts: r.Attempts}
		}),
		Changes: carry(old.ReactionChanges),
	}
}

// proposalsFromOld: every proposal, in the old order (creation; this
// package moves a decided one to the end, so pruning may drop another
// old decided one first, never a pending one), and the sequence, so a
// new proposal's ID ("p<n>", the same in both packages) is never an old
// one's. A decided proposal keeps no tool arguments here (the old run
// dropped them when its turn closed it; a carried turn has its calls in
// its own round). Refusals starts at zero: the old run told refusals as
// notices, under other keys. The expiry timer is armed by Resume.
func proposalsFromOld(old *workflows.State) ProposalsState {
	return ProposalsState{
		Proposals: convertCarried(old.Proposals, func(p workflows.Proposal) Proposal {
			out := Proposal(p)
			if out.Status != ProposalPending {
				out.Call.Arguments = ""
			}
			return out
		}),
		Seq: old.ProposalSeq,
	}
}

// controlFromOld: the chat's /think, /verbose, /usage and /send
// settings, the think note due, the usage totals, the idle clock, and
// the heartbeat ticks seen with the latest one's record.
func controlFromOld(old workflows.ControlState) ControlState {
	s := ControlState{
		Think: old.Think, Verbose: old.Verbose, UsageMode: old.UsageMode, Muted: old.Muted,
		ThinkNoteDue: old.ThinkNoteDue, UsageTotal: old.UsageTotal,
		IdleFrom: old.IdleFrom, PersonActed: old.PersonActed,
		HeartbeatTicks: carry(old.HeartbeatTicks),
	}
	if h := old.LastHeartbeat; h != nil {
		record := HeartbeatRecord(*h)
		s.LastHeartbeat = &record
	}
	return s
}

// clearDueAtOnce is a clear time long past: the clear timer, armed at
// the earliest clear by Resume, fires at once for it.
var clearDueAtOnce = time.Unix(0, 0).UTC()

// endUncarried ends a turn the old run could not have carried: its
// record says it failed, and its messages' reactions (those steered in
// too; steer-backlog ones are queued, and keep theirs) are owed a clear
// now. The turn has nothing to go on with: a model step or delivery under
// way in the old run does not answer this one.
func (s *State) endUncarried(old *workflows.State) {
	a := old.Active
	rec := &TurnRecord{TurnID: a.TurnID, StartedAt: a.StartedAt, Heartbeat: a.Heartbeat != ""}
	if s.Turn.Last != nil && s.Turn.Last.TurnID == a.TurnID {
		rec = s.Turn.Last
	}
	rec.Outcome, rec.Error = "failed", "not carried into the new session workflow (phase "+a.Phase+")"
	s.Turn.Last = rec
	var ids []string
	for _, m := range append(slices.Clone(a.Messages), a.Steered...) {
		ids = append(ids, m.MessageID)
	}
	if p := a.Progress; p != nil {
		for _, r := range p.Refs {
			ids = append(ids, r.ID)
		}
	}
	for i := range s.Reactions.Reactions {
		if r := &s.Reactions.Reactions[i]; slices.Contains(ids, r.MessageID) {
			r.ClearAt = clearDueAtOnce
		}
	}
}

// FromOldResume is what the first run on a state FromOld made does
// besides each part's Resume, for a carried turn that waits for
// decisions. The old run edits a proposal's message (its outcome, no
// more buttons) only when the whole step's wait ends; this package edits
// it when it is decided. So the carried turn's proposals decided in the
// old run are edited now; and when every one of them is decided already
// (a decision came with the old run's last task), the turn goes on, as
// the old run's resumed turn would have at once.
func FromOldResume(env Env, st *State) []Effect {
	a := st.Turn.Active
	if a == nil || a.Phase != PhaseWaiting || a.Calls == nil {
		return nil
	}
	var out []Effect
	waiting := false
	for _, d := range a.Decisions {
		waiting = waiting || !d.Decided
		i := slices.IndexFunc(st.Proposals.Proposals, func(p Proposal) bool {
			return p.TurnID == a.TurnID && p.Call.ID == d.CallID && p.Status != ProposalPending
		})
		if i < 0 {
			continue
		}
		if edit, ok := st.Proposals.Proposals[i].edit(env); ok {
			out = append(out, edit)
		}
	}
	if !waiting && len(a.Decisions) > 0 {
		last := a.Decisions[len(a.Decisions)-1]
		out = append(out, st.Turn.Decided(env, a.TurnID, last.CallID, last.Refused)...)
	}
	return out
}

// convertCarried maps a carried slice, nil for an empty one.
func convertCarried[From, To any](in []From, f func(From) To) []To {
	if len(in) == 0 {
		return nil
	}
	out := make([]To, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// carry copies a carried slice, nil for an empty one.
func carry[T any](in []T) []T {
	if len(in) == 0 {
		return nil
	}
	return slices.Clone(in)
}
