package gateway

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// ChainConfig is what NewChain builds the gateway's inbound chain from.
type ChainConfig struct {
	// Client, TaskQueue and Scope are the Ingress's: where the sessions'
	// signals go.
	Client    client.Client
	TaskQueue string
	Scope     func(channel string) pipeline.SessionScope
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
	limiter := NewLimiter(&Ingress{Client: cfg.Client, TaskQueue: cfg.TaskQueue, Scope: cfg.Scope}, cfg.Limits, cfg.Logger)
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
