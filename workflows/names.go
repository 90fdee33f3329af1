package workflows

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/temporal"
)

// Names other processes use to reach a session workflow.
const (
	// WorkflowName is the registered type of the deleted release before
	// chat-session, whose runs moved on into it (releases.go).
	WorkflowName = "session"
	// ChatSessionName is the registered type of the session workflow
	// (package workflows/session) that the gateway starts.
	ChatSessionName = "chat-session"
	// SignalInbound carries a pipeline.Inbound.
	SignalInbound = "inbound"
	// QueryState returns a Snapshot as JSON.
	QueryState = "state"
	// SignalProposal carries a pipeline.Decision.
	SignalProposal = "proposal"
	// UpdateDecide takes a pipeline.Decision and answers at once: a
	// validator refuses what is not allowed, unknown or already decided.
	UpdateDecide = "decide"
	// SignalDisengage drops the sticky credits: the agent answers again
	// only when mentioned, replied to or named.
	SignalDisengage = "disengage"
	// SignalRetry resumes a parked delivery: the chunks not yet delivered
	// are sent, in order. Its payload (who asked, why) is optional.
	SignalRetry = "retry"
	// SignalFeedback carries a pipeline.Feedback: a user's reaction on a
	// message, which the session records in the store.
	SignalFeedback = "feedback"
	// SignalHeartbeat carries a pipeline.HeartbeatTick from a heartbeat
	// schedule's tick (HeartbeatTickWorkflow); its ID is the same for
	// every delivery of one tick.
	SignalHeartbeat = "heartbeat"
	// SignalReload makes the session read its settings again (the
	// worker's configuration and the session entry): an open chat takes a
	// changed allow list, owner list, model chain or deadline at its next
	// message or turn. Its payload (who asked, why) is a ReloadRequest and
	// is optional.
	SignalReload = "reload"
	// SignalMoveOn makes a session run continue as new at its next quiet
	// point (between turns, or while its turn waits for a person), into
	// a fresh run of the live workflow type that carries its state: what
	// `replyflow releases --move-on` sends the runs that still read a
	// retiring release's state. Its payload (who asked, why) is a
	// MoveOnRequest and is optional.
	SignalMoveOn = "move-on"
)

// SessionTypesQuery is the visibility filter of every session, whichever
// session workflow type ran it: a deleted release's too, whose closed
// runs stay listed for the namespace's retention.
func SessionTypesQuery() string {
	return fmt.Sprintf("WorkflowType IN (%q, %q)", ChatSessionName, WorkflowName)
}

// Status is where a session stands, kept in the ReplyflowState search
// attribute so an operator can find sessions by it.
type Status string

const (
	StatusIdle           Status = "idle"
	StatusDebouncing     Status = "debouncing"
	StatusGating         Status = "gating"
	StatusThinking       Status = "thinking"
	StatusWaitingUser    Status = "waiting_user"
	StatusDelivering     Status = "delivering"
	StatusDeliveryFailed Status = "delivery_failed"
)

// Custom search attributes. They must be registered on the namespace
// (`replyflow dev` does it; deploy/README.md says how for production).
var (
	AttrChannel          = temporal.NewSearchAttributeKeyKeyword("ReplyflowChannel")
	AttrChat             = temporal.NewSearchAttributeKeyKeyword("ReplyflowChat")
	AttrState            = temporal.NewSearchAttributeKeyKeyword("ReplyflowState")
	AttrQueueDepth       = temporal.NewSearchAttributeKeyInt64("ReplyflowQueueDepth")
	AttrPendingProposals = temporal.NewSearchAttributeKeyInt64("ReplyflowPendingProposals")
	AttrLastInboundAt    = temporal.NewSearchAttributeKeyTime("ReplyflowLastInboundAt")
	// AttrHeldUntil and AttrHeldReason say until when and why a session
	// gets no model call (pipeline.Hold); a session whose hold ended
	// keeps the past time until its next step is let through, so a
	// query compares with now: ReplyflowHeldUntil > "<now>".
	AttrHeldUntil  = temporal.NewSearchAttributeKeyTime("ReplyflowHeldUntil")
	AttrHeldReason = temporal.NewSearchAttributeKeyKeyword("ReplyflowHeldReason")
)

// SearchAttributes lists every custom attribute with its type name as the
// Temporal CLI spells it, for `temporal operator search-attribute create` and
// `temporal server start-dev --search-attribute`.
func SearchAttributes() []string {
	keys := []temporal.SearchAttributeKey{AttrChannel, AttrChat, AttrState, AttrQueueDepth, AttrPendingProposals, AttrLastInboundAt, AttrHeldUntil, AttrHeldReason}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s=%s", k.GetName(), cliTypeName(k)))
	}
	return out
}

func cliTypeName(k temporal.SearchAttributeKey) string {
	switch k.GetValueType() {
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
		return "Keyword"
	case enumspb.INDEXED_VALUE_TYPE_INT:
		return "Int"
	case enumspb.INDEXED_VALUE_TYPE_DATETIME:
		return "Datetime"
	}
	panic("workflows: no CLI type for search attribute " + k.GetName())
}
