package workflows

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
