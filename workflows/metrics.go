package workflows

import (
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
)

// replyflow's series from the session. They go through the worker's
// metrics handler (workflow.GetMetricsHandler), which records nothing
// while a history replays, and create no commands: no version needed.
const (
	MetricTurns         = "replyflow_turns"          // by channel, outcome
	MetricTurnDuration  = "replyflow_turn_duration"  // by channel, outcome
	MetricModelAttempts = "replyflow_model_attempts" // by provider, model, error
	MetricFallbacks     = "replyflow_fallbacks"      // by reason (the error type moved on from)
	MetricDeliveries    = "replyflow_deliveries"     // by channel, outcome
	MetricParked        = "replyflow_parked"         // by channel
	MetricHeartbeats    = "replyflow_heartbeats"     // by outcome
	MetricGateDecisions = "replyflow_gate_decisions" // by decision (forward, skip, failed)
	MetricProposals     = "replyflow_proposals"      // by outcome (approved, rejected, expired)
	// MetricFirstChunk is the time from when the gateway received the
	// turn's last message to its first delivered chunk, by channel.
	MetricFirstChunk = "replyflow_first_chunk_latency"
	// MetricReactionsClearedLate counts clears that ran over lateClear
	// after they were due, by channel.
	MetricReactionsClearedLate = "replyflow_reactions_cleared_late"
)

// lateClear is how late a reaction's clear may run before it counts as
// late: a timer fires within seconds, so a minute means the session
// could not run.
const lateClear = time.Minute

// count adds one to a series with tags.
func (e *runEnv) count(name string, tags map[string]string) {
	workflow.GetMetricsHandler(e.ctx).WithTags(tags).Counter(name).Inc(1)
}

// turnEnded records a finished turn.
func (e *runEnv) turnEnded(outcome string, took time.Duration) {
	tags := map[string]string{"channel": e.key.Channel, "outcome": outcome}
	h := workflow.GetMetricsHandler(e.ctx).WithTags(tags)
	h.Counter(MetricTurns).Inc(1)
	h.Timer(MetricTurnDuration).Record(took)
}

// modelAttempted records one model attempt; errType "" is a success.
func (e *runEnv) modelAttempted(model, errType string) {
	provider, _, _ := strings.Cut(model, "/")
	if errType == "" {
		errType = "none"
	}
	e.count(MetricModelAttempts, map[string]string{"provider": provider, "model": model, "error": errType})
}
