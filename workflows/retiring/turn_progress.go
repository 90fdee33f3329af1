package retiring

import (
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// maxCarriedTurnBytes bounds the progress of a turn that continue-as-new
// may carry (its text, the model's pending calls, the reply's chunks):
// the whole state is one payload, with a size limit, and the rest of the
// state takes most of it at its bounds (TestLargestStateFitsInOnePayload).
// The pending proposals of a waiting turn repeat its calls' arguments, so
// they take at most as much again. A turn whose progress is larger (a
// huge reply parked, huge tool arguments) holds the run until it ends, as
// every turn did before turns could be carried.
const maxCarriedTurnBytes = 128 << 10

// carriable is true while the running turn waits for something only a
// person or an operator gives (decisions, a retry), with nothing of its
// own under way, so continue-as-new may carry it (session.mayCarry).
func (s *turns) carriable() bool {
	a := s.st.Active
	if !s.v.promises || a == nil || a.Progress == nil || a.Aborted || a.Interrupted || progressSize(a.Progress) > maxCarriedTurnBytes {
		return false
	}
	switch a.Phase {
	case PhaseWaiting:
		return a.Progress.Waiting != nil
	case PhaseParked:
		return !a.RetryRequested && len(a.Progress.Chunks) > 0
	}
	return false
}

// resumeTurn goes on with a turn the previous run carried: one waiting
// for decisions waits again (the proposals and their expiry are in
// State), one parked waits for the retry again; each then finishes as it
// would have in the run that began it.
func (s *turns) resumeTurn() {
	a := s.st.Active
	if a == nil {
		return
	}
	rec := s.st.LastTurn
	if rec == nil || rec.TurnID != a.TurnID {
		rec = &TurnRecord{TurnID: a.TurnID, StartedAt: a.StartedAt, Outcome: "running", Heartbeat: a.Heartbeat != ""}
		s.st.LastTurn = rec
	}
	p := a.Progress
	s.log.Info("Resuming a turn carried from the previous run", "turn_id", a.TurnID, "phase", a.Phase)
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer s.endTurn(ctx, a, rec)
		switch {
		case a.Phase == PhaseWaiting && p != nil && p.Waiting != nil:
			thinkingOn, ok := s.toolStep(ctx, a, p, p.Waiting.Round, p.Waiting.Proposals)
			if !ok {
				s.endStopped(a, rec, p.Refs)
				return
			}
			reply, ok := s.modelSteps(ctx, a, rec, p, thinkingOn, false)
			if ok {
				s.deliverReply(ctx, a, rec, reply, a.Messages[p.Anchor], p.Refs)
			}
		case a.Phase == PhaseParked && p != nil && len(p.Chunks) > 0:
			if s.parkWait(ctx, a, rec) {
				s.deliverChunks(ctx, a, rec, p, a.Messages[p.Anchor])
			}
		default:
			// Nothing this code can go on with: the turn ends, and its
			// messages' reactions are cleared.
			s.log.Error("A carried turn could not be resumed; it ends unanswered", "turn_id", a.TurnID, "phase", a.Phase)
			rec.Outcome, rec.Error = "failed", "could not be resumed after continue-as-new"
			if p != nil {
				s.reactions.react(p.Refs, pipeline.ReactionError)
			}
		}
	})
}
