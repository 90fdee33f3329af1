package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// react moves each message of a batch to a reaction state and, for the
// final states, schedules the durable clear.
func (s *session) react(batch []pipeline.Inbound, state pipeline.ReactionState) {
	for _, in := range batch {
		r := s.st.reaction(in.MessageID)
		if r == nil {
			s.st.Reactions = append(s.st.Reactions, Reaction{MessageID: in.MessageID, ThreadID: in.ThreadID})
			r = &s.st.Reactions[len(s.st.Reactions)-1]
		}
		r.State = state
		r.ClearAt = time.Time{}
		s.st.ReactionChanges = append(s.st.ReactionChanges, pipeline.ReactionChange{
			Session: s.key, MessageID: in.MessageID, ThreadID: in.ThreadID, State: state,
		})
		if delay, ok := s.clearDelay(state); ok {
			r.ClearAt = workflow.Now(s.ctx).Add(delay)
			s.armClear(*r)
		}
	}
}

func (s *session) clearDelay(state pipeline.ReactionState) (time.Duration, bool) {
	switch state {
	case pipeline.ReactionDone:
		return s.settings.ReactionClearDelay.D(), true
	case pipeline.ReactionError:
		return s.settings.ErrorClearDelay.D(), true
	}
	return 0, false
}

// rearmClears restarts the clear timers of a run that continued as new.
func (s *session) rearmClears() {
	for _, r := range s.st.Reactions {
		if !r.ClearAt.IsZero() {
			s.armClear(r)
		}
	}
}

// armClear starts a durable timer that clears r when it fires, unless the
// message moved to another state in the meantime.
func (s *session) armClear(r Reaction) {
	delay := r.ClearAt.Sub(workflow.Now(s.ctx))
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		if delay > 0 {
			timer := workflow.NewTimerWithOptions(ctx, delay, workflow.TimerOptions{
				Summary: "clear " + r.State.Emoji() + " on " + r.MessageID + " in " + delay.String(),
			})
			if err := timer.Get(ctx, nil); err != nil {
				return
			}
		}
		current := s.st.reaction(r.MessageID)
		if current == nil || !current.ClearAt.Equal(r.ClearAt) {
			return
		}
		current.State, current.ClearAt = pipeline.ReactionNone, time.Time{}
		s.st.ReactionChanges = append(s.st.ReactionChanges, pipeline.ReactionChange{
			Session: s.key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: pipeline.ReactionNone,
		})
	})
}

// applyReactions sends reaction changes one at a time, in order, so a
// platform never sees ✍️ overtaken by 👀. A change leaves the queue only once
// applied, so continue-as-new carries the one in flight.
func (s *session) applyReactions(ctx workflow.Context) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    5,
		},
	})
	for {
		if err := workflow.Await(ctx, func() bool { return len(s.st.ReactionChanges) > 0 }); err != nil {
			return
		}
		change := s.st.ReactionChanges[0]
		err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivitySetReaction, change).Get(ctx, nil)
		if err != nil {
			// Reactions are a courtesy: a platform that refuses one must
			// not block the conversation. The failure is in history.
			s.log.Warn("Reaction not applied", "message_id", change.MessageID, "state", change.State, "error", err)
		}
		s.st.ReactionChanges = s.st.ReactionChanges[1:]
		if r := s.st.reaction(change.MessageID); r != nil && r.State == pipeline.ReactionNone {
			s.st.dropReaction(change.MessageID)
		}
	}
}
