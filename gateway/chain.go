package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// ChainConfig is what NewChain builds the gateway's inbound chain from.
type ChainConfig struct {
	// Client, TaskQueue and Scope are the Ingress's: where the sessions'
	// signals go.
	Client    client.Client
	TaskQueue string
	Scope     func(channel string) pipeline.SessionScope
	// Media is the Ingress's: where the files of messages are recorded.
	Media adapters.MediaLog
	// Limits are the Limiter's (REPLYFLOW_RATE_*, the allow lists).
	Limits Limits
	// Metrics counts each inbound message's outcome (replyflow_inbound);
	// nil leaves the Counted stage out.
	Metrics client.MetricsHandler
	Logger  *slog.Logger
}

// Chain is the gateway's inbound chain: the adapters hand it every
// platform event, and it is both their Sink and their FeedbackSink. A
// message passes these stages, outermost first:
//
//  1. Drain refuses it once Close was called, so a stopping gateway
//     starts nothing new; the platform delivers it again.
//  2. Counted counts its outcome (when Metrics is set): accepted, or
//     rejected by a rate limit or by Temporal. A refused message of a
//     stopping gateway is not counted: it comes again.
//  3. Limiter drops it when over a rate limit, and tells its sender once.
//  4. Ingress signals its session's workflow.
//
// Feedback (reactions) enters at the Limiter: it is neither refused
// while stopping nor counted.
type Chain struct {
	drain   *Drain
	limiter *Limiter
}

var (
	_ adapters.Sink         = (*Chain)(nil)
	_ adapters.FeedbackSink = (*Chain)(nil)
)

// NewChain builds the inbound chain from cfg and logs the rate limits it
// runs with.
func NewChain(cfg ChainConfig) *Chain {
	limiter := NewLimiter(&Ingress{Client: cfg.Client, TaskQueue: cfg.TaskQueue, Scope: cfg.Scope, Media: cfg.Media}, cfg.Limits, cfg.Logger)
	var limited adapters.Sink = limiter
	if cfg.Metrics != nil {
		limited = &Counted{Next: limiter, Metrics: cfg.Metrics}
	}
	l := cfg.Limits
	cfg.Logger.Info("Inbound rate limits (REPLYFLOW_RATE_*)", "sender", l.Sender.String(), "chat", l.Chat.String(),
		"new_sessions", l.NewSessions.String(), "new_sessions_global", l.NewSessionsGlobal.String())
	return &Chain{drain: &Drain{Next: limited}, limiter: limiter}
}

// Accept hands in through every stage, from the Drain in.
func (c *Chain) Accept(ctx context.Context, in pipeline.Inbound) error {
	return c.drain.Accept(ctx, in)
}

// Feedback hands f to the Limiter, and through it to the Ingress.
func (c *Chain) Feedback(ctx context.Context, f pipeline.Feedback) error {
	return c.limiter.Feedback(ctx, f)
}

// NotifyThrough sets where the Limiter's slow-down notices go: the
// platforms, which start after the chain is built.
func (c *Chain) NotifyThrough(n Notifier) { c.limiter.NotifyThrough(n) }

// Close makes every later message be refused with ErrDraining, and Ready
// fail.
func (c *Chain) Close() { c.drain.Close() }

// Ready is the readiness check of a stopping gateway: unready once
// closed, so a load balancer sends nothing more.
func (c *Chain) Ready(ctx context.Context) error { return c.drain.Ready(ctx) }

// Wait returns once the slow-down notices in flight are sent or timed
// out (NoticeTimeout each).
func (c *Chain) Wait() { c.limiter.Wait() }

// Ingress hands inbound messages and feedback to their session workflows.
// It is the gateway's adapters.Sink: Accept returns nil only once Temporal
// durably accepted the signal, so the adapter may ack the platform.
type Ingress struct {
	Client    client.Client
	TaskQueue string
	// Scope is the session scope of a channel's group chats
	// (REPLYFLOW_SESSION_SCOPE); nil shares one session per chat.
	Scope func(channel string) pipeline.SessionScope
	// Media records the files of a message before its signal, for the
	// turn's activity to fetch (adapters.MediaLog); nil records none, and
	// the model then sees files only as lines of text.
	Media adapters.MediaLog
}

var (
	_ adapters.Sink         = (*Ingress)(nil)
	_ adapters.FeedbackSink = (*Ingress)(nil)
)

// Accept signals the session's workflow, starting it if it is not running.
func (i *Ingress) Accept(ctx context.Context, in pipeline.Inbound) error {
	key := i.SessionOf(in)
	if i.Media != nil && len(in.Media) > 0 {
		// Before the signal: a turn that reads the message finds its
		// files. A failure refuses the message, and the platform
		// delivers it again.
		if err := i.Media.RecordMedia(ctx, key.WorkflowID(), in.MessageID, in.Media); err != nil {
			return fmt.Errorf("record the files of message %s: %w", in.MessageID, err)
		}
	}
	return i.signal(ctx, key, workflows.SignalInbound, in)
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
	// for a running workflow, where it ignores them, so sending them would
	// slow every message's ingress. A session no worker has run yet is
	// found by its missing ReplyflowState (docs/operating.md, "Stuck
	// conversations").
	opts := client.StartWorkflowOptions{
		ID:            key.WorkflowID(),
		TaskQueue:     i.TaskQueue,
		StaticSummary: fmt.Sprintf("%s chat %s", key.Channel, key.Chat),
		StaticDetails: fmt.Sprintf("Session workflow for %s chat `%s`. Query `state` for a snapshot; see docs/operating.md, \"Acting on a session by hand\".", key.Channel, key.Chat),
	}
	_, err := i.Client.SignalWithStartWorkflow(ctx, key.WorkflowID(), name, payload, opts,
		workflows.ChatSessionName, workflows.SessionParams{Session: key})
	if err != nil {
		return fmt.Errorf("signal-with-start %s (%s): %w", key.WorkflowID(), name, err)
	}
	return nil
}
