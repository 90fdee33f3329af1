package retiring

import (
	"encoding/json"
	"math"

	"github.com/replyflow/replyflow/pipeline"
)

// options are the turn's chat settings; all off when it has none.
func activeOptions(a *ActiveTurn) TurnOptions {
	if a.Options == nil {
		return TurnOptions{}
	}
	return *a.Options
}

func threadOf(a *ActiveTurn) string { return a.Messages[len(a.Messages)-1].ThreadID }

func addUsage(t *TurnRecord, u *pipeline.Usage) {
	if u == nil {
		return
	}
	sum := *u
	if t.Usage != nil {
		sum = t.Usage.Add(*u)
	}
	t.Usage = &sum
}

func recordDelivery(s *TurnState, d DeliveryRecord) {
	s.Deliveries = append(s.Deliveries, d)
	if over := len(s.Deliveries) - deliveryWindow; over > 0 {
		s.Deliveries = append([]DeliveryRecord(nil), s.Deliveries[over:]...)
	}
}

func proposalView(p Proposal) pipeline.ProposalView {
	v := pipeline.ProposalView{ID: p.ID, Tool: p.Call.Name, Summary: p.Summary, Requester: p.Requester, ExpiresAt: p.ExpiresAt,
		DecidedBy: p.DecidedBy, Reason: p.Reason}
	if p.Status != ProposalPending {
		v.Outcome = p.Status
	}
	return v
}

// stopped is true once a /stop or an interrupt ended the turn; what runs
// after a stop is never delivered.
func stopped(a *ActiveTurn) bool { return a.Aborted || a.Interrupted }

// stopOutcome names how a stopped turn ended. A /stop wins over an
// interrupt: it also dropped the batch that interrupted.
func stopOutcome(a *ActiveTurn) string {
	if a.Aborted {
		return "aborted"
	}
	return "interrupted"
}

func reactionOf(s *ReactionsState, messageID string) *Reaction {
	for i := range s.Reactions {
		if s.Reactions[i].MessageID == messageID {
			return &s.Reactions[i]
		}
	}
	return nil
}

func dropReaction(s *ReactionsState, messageID string) {
	kept := s.Reactions[:0]
	for _, r := range s.Reactions {
		if r.MessageID != messageID {
			kept = append(kept, r)
		}
	}
	s.Reactions = kept
}

// size is how many bytes the progress takes in the carried state (its
// JSON, escapes included). It is measured only when the run is about to
// continue as new.
func progressSize(p *TurnProgress) int {
	data, err := json.Marshal(p)
	if err != nil {
		return math.MaxInt
	}
	return len(data)
}
