package retiring

import (
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
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
