package activities

import (
	"context"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// silentClearBudget bounds the clears a silent step makes before it
// returns: they are a courtesy, and the step's answer must not wait on a
// slow platform.
const silentClearBudget = 5 * time.Second

// silent is true for a final answer the session delivers nothing of: the
// model said NO_REPLY (or only HEARTBEAT_OK), called skip_response, or a
// budget or breaker answered for it; and nothing was shown while it
// streamed.
func silent(result pipeline.TurnResult) bool {
	for _, c := range result.ToolCalls {
		if c.Name == pipeline.SkipResponseTool {
			return true
		}
	}
	if len(result.ToolCalls) > 0 || !result.Shown.Empty() {
		return false
	}
	_, speaks := pipeline.NormalizeReply(result.Reply)
	return !speaks
}

// clearSilentTurn takes the reactions off the messages of a turn that
// answers nothing: the session ends such a turn without a reply, and so
// without the done reaction whose clear would take 👀 or ✍️ away, which
// would otherwise stay on a message the agent chose not to answer (a
// group it only reads, a spent budget). A clear the platform refuses is
// logged; the turn is silent either way.
func (a *Activities) clearSilentTurn(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest, result pipeline.TurnResult) {
	if isHeartbeatTurn(req) || !silent(result) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), silentClearBudget)
	defer cancel()
	seen := map[string]bool{}
	for _, m := range req.Messages {
		if m.MessageID == "" || seen[m.MessageID] {
			continue
		}
		seen[m.MessageID] = true
		change := pipeline.ReactionChange{Session: req.Session, MessageID: m.MessageID, ThreadID: req.ThreadID, State: pipeline.ReactionNone}
		if err := out.SetReaction(ctx, change); err != nil {
			a.Logger.Warn("Reaction of a silent turn not cleared", "session", req.Session.WorkflowID(), "turn_id", req.TurnID, "message_id", m.MessageID, "error", err)
		}
	}
}
