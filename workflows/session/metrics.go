package session

import (
	"strings"
	"time"

	"github.com/replyflow/replyflow/workflows"
)

// Count adds one to a series of replyflow's (workflows.Metric*) with
// tags; Time records a duration in one. Metrics go through the worker's
// metrics handler, which records nothing while a history replays, and
// make no command.
type (
	Count struct {
		Name string
		Tags map[string]string
	}
	Time struct {
		Name string
		Tags map[string]string
		Took time.Duration
	}
)

func (Count) isEffect() {}
func (Time) isEffect()  {}

// turnMetrics are a finished turn's series.
func turnMetrics(env Env, rec TurnRecord) []Effect {
	tags := map[string]string{"channel": env.Key.Channel, "outcome": rec.Outcome}
	return []Effect{Count{Name: workflows.MetricTurns, Tags: tags}, Time{Name: workflows.MetricTurnDuration, Tags: tags, Took: rec.FinishedAt.Sub(rec.StartedAt)}}
}

// attemptMetric is one model attempt's series; errType "" is a success.
func attemptMetric(model, errType string) Effect {
	provider, _, _ := strings.Cut(model, "/")
	if errType == "" {
		errType = "none"
	}
	return Count{Name: workflows.MetricModelAttempts, Tags: map[string]string{"provider": provider, "model": model, "error": errType}}
}
