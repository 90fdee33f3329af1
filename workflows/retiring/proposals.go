package retiring

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// keptProposals bounds the decided proposals kept to answer late or
// repeated decisions.
const keptProposals = 50

// proposals is the part that holds tool calls for a person's decision: it
// owns ProposalsState, takes decisions (the "decide" update, the
// "proposal" signal, buttons and /approve), posts and closes the proposal
// messages and expires what nobody decided. A turn reaches it through
// propose, waitForDecisions and close; it touches no other state.
type proposals struct {
	*runEnv
	st *ProposalsState
	// decisions carries proposal decisions sent as signals.
	decisions workflow.ReceiveChannel
}

func (s *proposals) get(id string) *Proposal {
	for i := range s.st.Proposals {
		if s.st.Proposals[i].ID == id {
			return &s.st.Proposals[i]
		}
	}
	return nil
}

func (s *proposals) pending() int {
	n := 0
	for _, p := range s.st.Proposals {
		if p.Status == ProposalPending {
			n++
		}
	}
	return n
}

// register installs the "decide" update, whose validator answers a
// refusal at once, before anything reaches history. It is registered
// before the run's settings are loaded, so an update in the run's first
// task is not refused as unknown: until then the validator checks what the
// carried state knows (the decision's form, the proposal), and the handler
// waits for the settings before it checks who decides.
func (s *proposals) register() error {
	return workflow.SetUpdateHandlerWithOptions(s.ctx, UpdateDecide,
		func(ctx workflow.Context, d pipeline.Decision) (string, error) {
			if err := workflow.Await(ctx, func() bool { return s.settingsLoaded }); err != nil {
				return "", err
			}
			return s.decide(d)
		},
		workflow.UpdateHandlerOptions{Validator: func(d pipeline.Decision) error {
			if !s.settingsLoaded {
				return s.checkDecisionForm(d)
			}
			_, err := s.checkDecision(d)
			return err
		}})
}

// checkDecisionForm is the part of checkDecision that needs no settings.
func (s *proposals) checkDecisionForm(d pipeline.Decision) error {
	if err := d.Validate(); err != nil {
		return err
	}
	if s.get(d.ID) == nil {
		return fmt.Errorf("unknown proposal %q in %s", d.ID, s.key.WorkflowID())
	}
	return nil
}

// checkDecision refuses a decision that is malformed, about an unknown
// proposal, by someone not allowed, or contrary to one already made. It
// returns true when the same decision was already made: a double click.
func (s *proposals) checkDecision(d pipeline.Decision) (repeat bool, err error) {
	return s.checkDecisionBy(d, false)
}

// checkDecisionBy is checkDecision for a decider the adapter may have
// verified as an owner (ownerVerified, from Inbound.SenderIsOwner).
func (s *proposals) checkDecisionBy(d pipeline.Decision, ownerVerified bool) (repeat bool, err error) {
	if err := s.checkDecisionForm(d); err != nil {
		return false, err
	}
	p := s.get(d.ID)
	if !ownerVerified && !s.mayDecide(d.By, *p) {
		return false, fmt.Errorf("%s is not allowed to decide proposal %s: only owners%s may", d.By, d.ID,
			map[bool]string{true: " and its requester", false: ""}[s.settings.RequesterMayDecide])
	}
	if p.Status != ProposalPending {
		if p.Status == outcomeOf(d.Decision) && p.DecidedBy == d.By {
			return true, nil
		}
		return false, fmt.Errorf("proposal %s was already %s by %s", d.ID, p.Status, nonEmpty(p.DecidedBy, "its deadline"))
	}
	return false, nil
}

// mayDecide: owners (and "*"), operators (anyone with Temporal access, who
// decides through the CLI or the UI as "operator:<name>"), and the
// requester when the configuration allows it.
func (s *proposals) mayDecide(by string, p Proposal) bool {
	if strings.HasPrefix(by, "operator:") || slices.Contains(s.settings.Owners, "*") || slices.Contains(s.settings.Owners, by) {
		return true
	}
	return s.settings.RequesterMayDecide && by == p.Requester
}

// decide applies a decision after checking it; a repeat is one decision.
func (s *proposals) decide(d pipeline.Decision) (string, error) {
	return s.decideBy(d, false)
}

// decideBy is decide for a decider the adapter may have verified as an
// owner; see checkDecisionBy.
func (s *proposals) decideBy(d pipeline.Decision, ownerVerified bool) (string, error) {
	repeat, err := s.checkDecisionBy(d, ownerVerified)
	if err != nil {
		return "", err
	}
	p := s.get(d.ID)
	if !repeat {
		p.Status, p.DecidedBy, p.Reason = outcomeOf(d.Decision), d.By, d.Reason
		s.attrsDirty = true
		s.log.Info("Proposal decided", "proposal", p.ID, "decision", p.Status, "by", d.By)
	}
	return fmt.Sprintf("Proposal %s %s by %s.", p.ID, p.Status, p.DecidedBy), nil
}

func outcomeOf(decision string) string {
	if decision == pipeline.DecisionApprove {
		return ProposalApproved
	}
	return ProposalRejected
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// takeSignals applies decisions sent as the "proposal" signal; a refused
// one is logged, since a signal has no one to answer.
func (s *proposals) takeSignals() {
	for {
		var d pipeline.Decision
		if !s.decisions.ReceiveAsync(&d) {
			return
		}
		if _, err := s.decide(d); err != nil {
			s.log.Warn("Proposal decision refused", "proposal", d.ID, "by", d.By, "error", err)
		}
	}
}

// propose posts a proposal message with Approve and Reject buttons for a
// call that needs approval, and records the proposal.
func (s *proposals) propose(ctx workflow.Context, turnID string, call pipeline.ToolCall, origin pipeline.Inbound) string {
	s.st.ProposalSeq++
	now := workflow.Now(ctx)
	ttl := s.settings.ProposalTTL.D()
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	p := Proposal{
		ID: fmt.Sprintf("p%d", s.st.ProposalSeq), Call: call, Summary: pipeline.SummarizeArgs(call.Arguments),
		Requester: origin.Channel + ":" + origin.SenderID, Origin: origin.MessageID, ThreadID: origin.ThreadID,
		TurnID: turnID, CreatedAt: now, ExpiresAt: now.Add(ttl), Status: ProposalPending,
	}
	s.st.Proposals = append(s.st.Proposals, p)
	s.attrsDirty = true
	text, buttons := pipeline.RenderProposal(proposalView(p))
	id, err := s.deliver(ctx, pipeline.Delivery{
		Session: s.key, IdempotencyKey: s.key.WorkflowID() + "/proposal/" + turnID + "/" + p.ID,
		ThreadID: origin.ThreadID, ReplyTo: origin.MessageID, Text: text, Buttons: buttons, Total: 1,
	})
	if err != nil {
		// Nobody can see it, so nobody can decide it: it is rejected.
		s.log.Error("Proposal message not delivered; the proposal is rejected", "proposal", p.ID, "error", err)
		_, _ = s.decide(pipeline.Decision{ID: p.ID, Decision: pipeline.DecisionReject, By: "operator:replyflow", Reason: "the proposal could not be posted"})
		return p.ID
	}
	s.get(p.ID).MessageID = id
	return p.ID
}

// waitForDecisions waits until every proposal of ids is decided, expiring
// those whose time runs out (a durable timer), or the turn is aborted.
func (s *proposals) waitForDecisions(ctx workflow.Context, ids []string, aborted func() bool) error {
	undecided := func() []*Proposal {
		var out []*Proposal
		for _, id := range ids {
			if p := s.get(id); p != nil && p.Status == ProposalPending {
				out = append(out, p)
			}
		}
		return out
	}
	for {
		pending := undecided()
		if len(pending) == 0 {
			return nil
		}
		if aborted() {
			for _, p := range pending {
				p.Status, p.DecidedBy, p.Reason = ProposalRejected, "operator:replyflow", "the turn was aborted"
			}
			return nil
		}
		first := pending[0]
		for _, p := range pending[1:] {
			if p.ExpiresAt.Before(first.ExpiresAt) {
				first = p
			}
		}
		if wait := first.ExpiresAt.Sub(workflow.Now(ctx)); wait > 0 {
			_, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
				Timeout:      wait,
				TimerOptions: workflow.TimerOptions{Summary: "proposal " + first.ID + " expires in " + wait.Round(time.Second).String()},
			}, func() bool { return aborted() || len(undecided()) < len(pending) })
			if err != nil {
				for _, p := range undecided() {
					p.Status, p.DecidedBy, p.Reason = ProposalRejected, "operator:replyflow", "the turn was cancelled"
				}
				return err
			}
		}
		now := workflow.Now(ctx)
		for _, p := range undecided() {
			if !now.Before(p.ExpiresAt) {
				p.Status, p.Reason = ProposalExpired, "expired"
				s.attrsDirty = true
				s.log.Info("Proposal expired", "proposal", p.ID)
			}
		}
	}
}

// close edits the proposal message to show the outcome and who
// decided, without buttons, and returns what the model is told.
func (s *proposals) close(ctx workflow.Context, id string) pipeline.ToolResult {
	p := s.get(id)
	if s.v.promises {
		// A copy: closing prunes the oldest decided proposals, which
		// shifts the list under any pointer into it, and the outcome
		// read below must be this proposal's own.
		own := *p
		p = &own
		s.forgetArguments(id)
	}
	if p.MessageID != "" {
		text, buttons := pipeline.RenderProposal(proposalView(*p))
		// Shown even when the turn was aborted: its buttons must go.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		ectx := workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
			StartToCloseTimeout:    s.settings.DeliveryTimeout.D(),
			ScheduleToCloseTimeout: s.settings.DeliveryTimeout.D()*5 + queueAllowance,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 5},
			Summary:                "show the outcome of proposal " + p.ID,
		})
		edit := pipeline.Edit{Session: s.key, PlatformMessageID: p.MessageID, Text: text, Buttons: buttons}
		if s.v.slack {
			edit.ThreadID = p.ThreadID
		}
		if err := workflow.ExecuteActivity(ectx, pipeline.ActivityEdit, edit).Get(ectx, nil); err != nil && !errors.Is(err, workflow.ErrCanceled) {
			s.log.Warn("Proposal message not updated", "proposal", p.ID, "error", err)
		}
	}
	s.prune()
	s.count(MetricProposals, map[string]string{"outcome": p.Status})
	switch p.Status {
	case ProposalRejected:
		reason := ""
		if p.Reason != "" {
			reason = ": " + p.Reason
		}
		return pipeline.ToolResult{CallID: p.Call.ID, Name: p.Call.Name, IsError: true, Output: "The user rejected this call (" + p.DecidedBy + ")" + reason + ". It was not run."}
	case ProposalExpired:
		return pipeline.ToolResult{CallID: p.Call.ID, Name: p.Call.Name, IsError: true, Output: "Nobody approved this call in time (expired). It was not run."}
	}
	return pipeline.ToolResult{}
}

// forgetArguments drops a decided proposal's tool arguments (model
// output, of any size): what is kept of a decided proposal answers late or
// repeated decisions and shows the outcome, for which the summary is
// enough, so kept proposals stay small in the carried state.
func (s *proposals) forgetArguments(id string) {
	if p := s.get(id); p != nil && p.Status != ProposalPending {
		p.Call.Arguments = ""
	}
}

func (s *proposals) prune() {
	decided := len(s.st.Proposals) - s.pending()
	for i := 0; i < len(s.st.Proposals) && decided > keptProposals; {
		if s.st.Proposals[i].Status != ProposalPending {
			s.st.Proposals = append(s.st.Proposals[:i], s.st.Proposals[i+1:]...)
			decided--
			continue
		}
		i++
	}
}
