package gateway

import (
	"cmp"
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/retiring"
)

// Ingress hands inbound messages and feedback to their session workflows.
// It is the gateway's adapters.Sink: Accept returns nil only once Temporal
// durably accepted the signal, so the adapter may ack the platform.
type Ingress struct {
	Client    client.Client
	TaskQueue string
	// Scope is the session scope of a channel's group chats
	// (REPLYFLOW_SESSION_SCOPE); nil shares one session per chat.
	Scope func(channel string) pipeline.SessionScope
	// WorkflowType is the workflow type a new session starts on; empty
	// is this build's (workflows.StartedWorkflow). A benchmark sets it to
	// measure a release that a build older than this one started.
	WorkflowType string
}

var (
	_ adapters.Sink         = (*Ingress)(nil)
	_ adapters.FeedbackSink = (*Ingress)(nil)
)

// Accept signals the session's workflow, starting it if it is not running.
func (i *Ingress) Accept(ctx context.Context, in pipeline.Inbound) error {
	return i.signal(ctx, i.SessionOf(in), workflows.SignalInbound, in)
}

// SessionOf is the session a message goes to: under per-sender scope, a
// group message goes to its sender's session of the chat.
func (i *Ingress) SessionOf(in pipeline.Inbound) pipeline.SessionKey {
	if i.Scope == nil {
		return in.Session()
	}
	return in.SessionIn(i.Scope(in.Channel))
}

// Feedback signals a reaction to the session's workflow, which records it
// (the chat's session: a reaction names no sender's session).
func (i *Ingress) Feedback(ctx context.Context, f pipeline.Feedback) error {
	return i.signal(ctx, f.Session(), workflows.SignalFeedback, f)
}

// Heartbeat signals a heartbeat schedule's tick to the session's
// workflow, starting it if it is not running: the worker's
// activities.SessionSignaler, so a tick starts a session exactly as a
// message does.
func (i *Ingress) Heartbeat(ctx context.Context, key pipeline.SessionKey, tick pipeline.HeartbeatTick) error {
	return i.signal(ctx, key, workflows.SignalHeartbeat, tick)
}

func (i *Ingress) signal(ctx context.Context, key pipeline.SessionKey, name string, payload any) error {
	// No search attributes here: the session sets its channel and chat at
	// its first task, and the server checks attributes on every call, even
	// for a running workflow, where it ignores them (replyflow-bench:
	// ingress at 0.88 of the raw SignalWithStart rate with them, 0.97
	// without). A session no worker has run yet is found by its missing
	// ReplyflowState (see the README's stuck queries).
	opts := client.StartWorkflowOptions{
		ID:            key.WorkflowID(),
		TaskQueue:     i.TaskQueue,
		StaticSummary: fmt.Sprintf("%s chat %s", key.Channel, key.Chat),
		StaticDetails: fmt.Sprintf("Session workflow for %s chat `%s`. Query `state` for a snapshot; see the README's operator section.", key.Channel, key.Chat),
	}
	_, err := i.Client.SignalWithStartWorkflow(ctx, key.WorkflowID(), name, payload, opts,
		cmp.Or(i.WorkflowType, retiring.StartedWorkflow()), workflows.SessionParams{Session: key})
	if err != nil {
		return fmt.Errorf("signal-with-start %s (%s): %w", key.WorkflowID(), name, err)
	}
	return nil
}
