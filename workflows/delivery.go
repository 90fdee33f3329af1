package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// fastDeliveryTimeout bounds the local activity that sends a reply's
// first chunk: it holds the workflow task, so it gets one short try, and
// anything slower goes the regular way.
const fastDeliveryTimeout = 5 * time.Second

// deliverChunk sends one chunk of a reply. In runs that took changeCost
// the first chunk goes out in a local activity, in the workflow task that
// took the model's answer: no activity task to schedule, start and
// complete, and no workflow task after it, so the reply is out sooner
// and the turn spends fewer actions and events. The result is recorded
// (a marker) when that task completes, before anything else is sent:
// a later chunk is a regular activity, which that task schedules. If the
// local attempt fails, the chunk goes the regular way with the same
// idempotency key, retried until the delivery deadline, and the session
// shows "delivering" meanwhile.
func (s *turns) deliverChunk(ctx workflow.Context, a *ActiveTurn, d pipeline.Delivery) (pipeline.Delivered, error) {
	if !s.v.cost {
		id, err := s.deliver(ctx, d)
		return pipeline.Delivered{PlatformMessageID: id}, err
	}
	if d.Index == 0 && !a.SlowDelivery {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: min(fastDeliveryTimeout, s.settings.DeliveryTimeout.D()),
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:             fmt.Sprintf("deliver %d/%d to %s", d.Index+1, d.Total, s.key.Channel),
		})
		var out pipeline.Delivered
		err := workflow.ExecuteLocalActivity(lctx, pipeline.ActivityDeliver, d).Get(lctx, &out)
		if err == nil {
			return out, nil
		}
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			// Refused for good (PlatformRejected): parked at once, as
			// the activity would be; a retry goes the regular way.
			a.SlowDelivery, s.attrsDirty = true, true
			return pipeline.Delivered{}, err
		}
		s.log.Warn("First chunk not delivered at once; retrying it as an activity", "turn_id", a.TurnID, "error", err)
	}
	if !a.SlowDelivery {
		a.SlowDelivery, s.attrsDirty = true, true
	}
	return s.deliverDurably(ctx, d)
}

// deliverDurably is deliver, with the whole answer.
func (e *runEnv) deliverDurably(ctx workflow.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
	deadline := e.settings.DeliveryDeadline.D()
	if deadline <= 0 {
		deadline = defaultDeliveryDeadline
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    e.settings.DeliveryTimeout.D(),
		ScheduleToCloseTimeout: deadline,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
		Summary: fmt.Sprintf("deliver %d/%d to %s", d.Index+1, d.Total, e.key.Channel),
	})
	var out pipeline.Delivered
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityDeliver, d).Get(ctx, &out)
	return out, err
}
