package workflows

import (
	"encoding/json"
	"math"

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

// TurnProgress is where a turn's coroutine stands between the things it
// waits for. It lives in ActiveTurn, so a turn that waits for decisions
// or is parked, with nothing of its own under way, is carried by
// continue-as-new and goes on in the next run (resumeTurn) instead of
// holding a busy chat's history open for as long as it waits.
type TurnProgress struct {
	// Text is the turn's prompt text, steered messages included.
	Text string `json:"text"`
	// Refs are the user messages whose reactions follow the turn.
	Refs []msgRef `json:"refs,omitempty"`
	// Anchor is the index in ActiveTurn.Messages of the message the
	// reply answers.
	Anchor int `json:"anchor"`
	// Rounds are the tool rounds so far, results as store references.
	Rounds []pipeline.ToolRound `json:"rounds,omitempty"`
	// Reset: the turn already started a new transcript after a context
	// overflow, and does not again.
	Reset bool `json:"reset,omitempty"`
	// Waiting is the step whose tool calls wait for decisions.
	Waiting *WaitingStep `json:"waiting,omitempty"`
	// Chunks are the reply's chunks once delivery began; Next is the
	// first not yet delivered.
	Chunks []string `json:"chunks,omitempty"`
	Next   int      `json:"next,omitempty"`
}

// WaitingStep is a model step whose tool calls wait for decisions: its
// calls, and the proposal of each call that needs one.
type WaitingStep struct {
	Round     pipeline.ToolRound `json:"round"`
	Proposals []CallProposal     `json:"proposals"`
}

// CallProposal ties a tool call to the proposal posted for it.
type CallProposal struct {
	CallID     string `json:"call_id"`
	ProposalID string `json:"proposal_id"`
}

// size is how many bytes the progress takes in the carried state (its
// JSON, escapes included). It is measured only when the run is about to
// continue as new.
func (p *TurnProgress) size() int {
	data, err := json.Marshal(p)
	if err != nil {
		return math.MaxInt
	}
	return len(data)
}

// carriable is true while the running turn waits for something only a
// person or an operator gives (decisions, a retry), with nothing of its
// own under way, so continue-as-new may carry it (session.mayCarry).
func (s *turns) carriable() bool {
	a := s.st.Active
	if !s.v.promises || a == nil || a.Progress == nil || a.Aborted || a.Interrupted || a.Progress.size() > maxCarriedTurnBytes {
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
