package gateway

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Counted is a Sink that counts what it hands on, by channel and
// outcome, as the series replyflow_inbound (accepted, or rejected with
// the reason: a rate limit by name, or Temporal not taking the signal).
type Counted struct {
	Next    adapters.Sink
	Metrics client.MetricsHandler
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

var _ adapters.Sink = (*Counted)(nil)

// The gateway's series: inbound by channel, outcome and reason; and when
// each platform connection last delivered an event (Unix seconds; an
// alert compares it with time()).
const (
	MetricInbound   = "replyflow_inbound"
	MetricLastEvent = "replyflow_platform_last_event_timestamp_seconds"
)

// Accept hands in on and counts the outcome.
func (c *Counted) Accept(ctx context.Context, in pipeline.Inbound) error {
	err := c.Next.Accept(ctx, in)
	tags := map[string]string{"channel": in.Channel, "outcome": "accepted", "reason": ""}
	var limited *adapters.RateLimitedError
	switch {
	case errors.As(err, &limited):
		tags["outcome"], tags["reason"] = "rejected", "rate_limit_"+limited.Limit
	case err != nil:
		tags["outcome"], tags["reason"] = "rejected", "temporal_unavailable"
	}
	c.Metrics.WithTags(tags).Counter(MetricInbound).Inc(1)
	// Every event the platform sent counts as a sign of life, accepted
	// or not: silence is what an operator is paged for.
	c.Metrics.WithTags(map[string]string{"channel": in.Channel}).Gauge(MetricLastEvent).Update(float64(c.now().UnixNano()) / 1e9)
	return err
}

func (c *Counted) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
