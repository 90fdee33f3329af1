package retiring

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// runTools runs a step's tool calls in order. Calls that need approval
// are proposed first, all at once (unless proposed says a previous run
// posted them already), and the turn waits (⏳ on the user's messages)
// until each is decided or expires; then everything runs in the order the
// model asked.
func (s *turns) runTools(ctx workflow.Context, a *ActiveTurn, p *TurnProgress, round pipeline.ToolRound, origin pipeline.Inbound, proposed []CallProposal) ([]pipeline.ToolResult, bool) {
	calls := round.Calls
	resumed := proposed != nil
	if !resumed {
		for _, call := range calls {
			if call.RequiresApproval {
				proposed = append(proposed, CallProposal{CallID: call.ID, ProposalID: s.approvals.propose(ctx, a.TurnID, call, origin)})
			}
		}
	}
	proposalOf := func(callID string) (string, bool) {
		for i := len(proposed) - 1; i >= 0; i-- {
			if proposed[i].CallID == callID {
				return proposed[i].ProposalID, true
			}
		}
		return "", false
	}
	ids := make([]string, 0, len(proposed))
	for _, cp := range proposed {
		ids = append(ids, cp.ProposalID)
	}
	if len(ids) > 0 {
		a.Phase = PhaseWaiting
		if !resumed {
			s.reactions.react(p.Refs, pipeline.ReactionWaitingUser)
		}
		if s.v.promises {
			p.Waiting = &WaitingStep{Round: round, Proposals: proposed}
		}
		s.attrsDirty = true
		if err := s.approvals.waitForDecisions(ctx, ids, func() bool { return a.Aborted }); err != nil {
			s.log.Warn("Waiting for decisions ended", "error", err)
		}
		p.Waiting = nil
		a.Phase = PhaseModel
		s.reactions.react(p.Refs, pipeline.ReactionThinking)
		s.attrsDirty = true
	}
	results := make([]pipeline.ToolResult, 0, len(calls))
	for _, call := range calls {
		if id, ok := proposalOf(call.ID); ok {
			if res := s.approvals.close(ctx, id); res.IsError {
				results = append(results, res)
				continue
			}
		}
		if a.Aborted {
			results = append(results, pipeline.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Output: "the turn was aborted"})
			continue
		}
		if res, ok := s.runBuiltin(call); ok {
			results = append(results, res)
			continue
		}
		results = append(results, s.runTool(ctx, a, call))
	}
	return results, len(ids) > 0
}

// runTool runs one tool call as its own activity, once: a tool is not
// assumed idempotent. Whatever happens becomes a result the model reads.
func (s *turns) runTool(ctx workflow.Context, a *ActiveTurn, call pipeline.ToolCall) pipeline.ToolResult {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    s.settings.TurnTimeout.D(),
		ScheduleToCloseTimeout: s.settings.TurnTimeout.D() + queueAllowance,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:                fmt.Sprintf("tool %s (turn %d step %d)", call.Name, s.st.TurnSeq, a.Step),
	})
	inv := pipeline.ToolInvocation{Session: s.key, TurnID: a.TurnID, Call: call, StoreResult: s.v.cost}
	var result pipeline.ToolResult
	if err := workflow.ExecuteActivity(ctx, pipeline.ActivityRunTool, inv).Get(ctx, &result); err != nil {
		return pipeline.ToolResult{CallID: call.ID, Name: call.Name, Output: "the tool could not be run: " + err.Error(), IsError: true}
	}
	return result
}

// runBuiltin handles the tools the session answers itself.
func (s *turns) runBuiltin(call pipeline.ToolCall) (pipeline.ToolResult, bool) {
	if call.Name != pipeline.DisengageTool {
		return pipeline.ToolResult{}, false
	}
	s.engagement.disengage()
	return pipeline.ToolResult{CallID: call.ID, Name: call.Name, Output: "Disengaged: you will answer here again only when mentioned, replied to or named."}, true
}

func skipsResponse(calls []pipeline.ToolCall) bool {
	for _, c := range calls {
		if c.Name == pipeline.SkipResponseTool {
			return true
		}
	}
	return false
}
