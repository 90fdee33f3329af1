package retiring

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// feedbackAttempts bounds how often a feedback event is tried: it is
// worth keeping, but not worth holding a session's continue-as-new for
// long when the store is down.
const feedbackAttempts = 5

// recordFeedback stores a user's reaction on a message through the
// RecordFeedback activity, which resolves the message to the bot's
// internal one. It runs beside the main loop; continue-as-new waits for it.
func (s *replies) recordFeedback(f pipeline.Feedback) {
	s.feedbackInFlight++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.feedbackInFlight-- }()
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout:    localActivityTimeout,
			ScheduleToCloseTimeout: 2 * time.Minute,
			RetryPolicy: &temporal.RetryPolicy{
				InitialInterval: time.Second,
				MaximumAttempts: feedbackAttempts,
			},
			Summary: "record feedback",
		})
		err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivityRecordFeedback, f).Get(ctx, nil)
		if err != nil {
			s.log.Warn("Feedback not recorded; it is dropped", "event_id", f.EventID, "message_id", f.MessageID, "error", err)
		}
	})
}
