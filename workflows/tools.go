package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// runTools runs a step's tool calls in order. Calls that need approval
// are proposed first, all at once, and the turn waits (⏳ on the user's
// messages) until each is decided or expires; then everything runs in the
// order the model asked.
func (s *turns) runTools(ctx workflow.Context, a *ActiveTurn, calls []pipeline.ToolCall, origin pipeline.Inbound, refs []msgRef) ([]pipeline.ToolResult, bool) {
	proposals := map[string]string{}
	var ids []string
	for _, call := range calls {
		if call.RequiresApproval {
			id := s.approvals.propose(ctx, a.TurnID, call, origin)
			proposals[call.ID] = id
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		a.Phase = PhaseWaiting
		s.reactions.react(refs, pipeline.ReactionWaitingUser)
		s.attrsDirty = true
		if err := s.approvals.waitForDecisions(ctx, ids, func() bool { return a.Aborted }); err != nil {
			s.log.Warn("Waiting for decisions ended", "error", err)
		}
		a.Phase = PhaseModel
		s.reactions.react(refs, pipeline.ReactionThinking)
		s.attrsDirty = true
	}
	results := make([]pipeline.ToolResult, 0, len(calls))
	for _, call := range calls {
		if id, ok := proposals[call.ID]; ok {
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
