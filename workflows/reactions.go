package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const localActivityTimeout = 10 * time.Second

// react moves user messages to a reaction state. A change not yet sent is
// replaced by a newer one for the same message, so states superseded in the
// same workflow step never reach the platform. "thinking" is only recorded
// here: the model step shows it once it has run for the coalescing window
// (see pipeline.TurnRequest.ThinkingOn), so a fast turn goes 👀 → ✅.
// Final states schedule their durable clear.
func (s *session) react(refs []msgRef, state pipeline.ReactionState) {
	for _, ref := range refs {
		r := s.st.reaction(ref.ID)
		if r == nil {
			s.st.Reactions = append(s.st.Reactions, Reaction{MessageID: ref.ID, ThreadID: ref.Thread})
			r = &s.st.Reactions[len(s.st.Reactions)-1]
		}
		r.State, r.ClearAt = state, time.Time{}
		switch {
		case state == pipeline.ReactionThinking:
			s.unqueueReaction(ref.ID)
		case state == pipeline.ReactionNone && !r.Shown:
			// Nothing reached the platform: nothing to clear.
			s.unqueueReaction(ref.ID)
			s.st.dropReaction(ref.ID)
		default:
			s.queueReaction(pipeline.ReactionChange{Session: s.key, MessageID: ref.ID, ThreadID: ref.Thread, State: state})
		}
		if delay, ok := s.clearDelay(state); ok {
			r.ClearAt = workflow.Now(s.ctx).Add(delay)
			s.armClear(*r)
		}
	}
}

// clearLater keeps the messages' current reaction and clears it after delay.
func (s *session) clearLater(refs []msgRef, delay time.Duration) {
	for _, ref := range refs {
		if r := s.st.reaction(ref.ID); r != nil {
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

// queueReaction adds a change, replacing one for the same message that is
// still waiting (but not the one being sent).
func (s *session) queueReaction(c pipeline.ReactionChange) {
	for i := range s.st.ReactionChanges {
		if s.st.ReactionChanges[i].MessageID == c.MessageID && !(i == 0 && s.reactionInFlight) {
			s.st.ReactionChanges[i] = c
			return
		}
	}
	s.st.ReactionChanges = append(s.st.ReactionChanges, c)
}

func (s *session) unqueueReaction(messageID string) {
	kept := s.st.ReactionChanges[:0]
	for i, c := range s.st.ReactionChanges {
		if c.MessageID != messageID || (i == 0 && s.reactionInFlight) {
			kept = append(kept, c)
		}
	}
	s.st.ReactionChanges = kept
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
				Summary: "clear " + pipeline.DefaultEmoji[r.State] + " on " + r.MessageID + " in " + delay.String(),
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
		s.queueReaction(pipeline.ReactionChange{Session: s.key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: pipeline.ReactionNone})
	})
}

// applyReactions sends reaction changes one at a time, in order. It runs
// only once the main loop has taken every delivered signal, so the changes
// of one workflow step are coalesced before any is sent. A change leaves
// the queue only once applied, so continue-as-new carries the one pending.
func (s *session) applyReactions(ctx workflow.Context) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: localActivityTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    5,
		},
	})
	for {
		err := workflow.Await(ctx, func() bool { return len(s.st.ReactionChanges) > 0 && s.inbound.Len() == 0 })
		if err != nil {
			return
		}
		change := s.st.ReactionChanges[0]
		s.reactionInFlight = true
		if r := s.st.reaction(change.MessageID); r != nil {
			r.Shown = true
		}
		err = workflow.ExecuteLocalActivity(ctx, pipeline.ActivitySetReaction, change).Get(ctx, nil)
		s.reactionInFlight = false
		if err != nil {
			// Reactions are a courtesy: a platform that refuses one must
			// not block the conversation. The failure is in history.
			s.log.Warn("Reaction not applied", "message_id", change.MessageID, "state", change.State, "error", err)
		}
		s.st.ReactionChanges = s.st.ReactionChanges[1:]
		if r := s.st.reaction(change.MessageID); r != nil && r.State == pipeline.ReactionNone && change.State == pipeline.ReactionNone {
			s.st.dropReaction(change.MessageID)
		}
	}
}

func (s *State) reaction(messageID string) *Reaction {
	for i := range s.Reactions {
		if s.Reactions[i].MessageID == messageID {
			return &s.Reactions[i]
		}
	}
	return nil
}

func (s *State) dropReaction(messageID string) {
	kept := s.Reactions[:0]
	for _, r := range s.Reactions {
		if r.MessageID != messageID {
			kept = append(kept, r)
		}
	}
	s.Reactions = kept
}

func (s *State) recordDelivery(d DeliveryRecord) {
	s.Deliveries = append(s.Deliveries, d)
	if over := len(s.Deliveries) - deliveryWindow; over > 0 {
		s.Deliveries = append([]DeliveryRecord(nil), s.Deliveries[over:]...)
	}
}
