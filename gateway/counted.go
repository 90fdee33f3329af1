package gateway

import (
	"context"
	"errors"

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
}

var _ adapters.Sink = (*Counted)(nil)

// MetricInbound is the inbound series' name.
const MetricInbound = "replyflow_inbound"

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
	return err
}
