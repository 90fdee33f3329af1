package retiring

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const localActivityTimeout = 10 * time.Second

// reactions is the part that shows where each user message stands: it
// owns ReactionsState (the state each message should show and the changes
// not yet sent), the one change in flight, and the coroutines that send
// changes, clear final states and retry failed ones. Other parts only ask
// it to move messages to a state (react, clearLater) or where a message
// lives (tracked); nothing else touches reaction state.
type reactions struct {
	*runEnv
	st       *ReactionsState
	inFlight bool
	// inboundWaiting reports inbound signals not yet taken: no change is
	// sent before the main loop has taken them, so one step's changes
	// coalesce.
	inboundWaiting func() bool
}

// react moves user messages to a reaction state. A change not yet sent is
// replaced by a newer one for the same message, so states superseded in the
// same workflow step never reach the platform. "thinking" is only recorded
// here: the model step shows it once it has run for the coalescing window
// (see pipeline.TurnRequest.ThinkingOn), so a fast turn goes 👀 → ✅.
// Final states schedule their durable clear.
func (s *reactions) react(refs []msgRef, state pipeline.ReactionState) {
	for _, ref := range refs {
		r := reactionOf(s.st, ref.ID)
		if r == nil && s.v.hardened && len(s.st.Reactions) >= maxReactions {
			s.log.Warn("Reaction not shown: the session tracks too many reactions already", "message_id", ref.ID, "tracked", len(s.st.Reactions))
			continue
		}
		if r == nil {
			s.st.Reactions = append(s.st.Reactions, Reaction{MessageID: ref.ID, ThreadID: ref.Thread})
			r = &s.st.Reactions[len(s.st.Reactions)-1]
		}
		unchanged := r.State == state && r.Shown && !s.reactionQueued(ref.ID)
		r.State, r.ClearAt, r.RetryAt, r.Attempts = state, time.Time{}, time.Time{}, 0
		switch {
		case unchanged:
			// Already showing; only its clear is rescheduled below.
		case state == pipeline.ReactionThinking:
			s.unqueueReaction(ref.ID)
		case state == pipeline.ReactionNone && !r.Shown:
			// Nothing reached the platform: nothing to clear.
			s.unqueueReaction(ref.ID)
			dropReaction(s.st, ref.ID)
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
func (s *reactions) clearLater(refs []msgRef, delay time.Duration) {
	for _, ref := range refs {
		if r := reactionOf(s.st, ref.ID); r != nil {
			r.ClearAt = workflow.Now(s.ctx).Add(delay)
			s.armClear(*r)
		}
	}
}

// clearStopped clears the messages of a stopped turn at once. A message
// still "thinking" may show a ✍️ that the model attempt put up itself
// (and takes back itself once it sees the cancellation, see
// activities.AgentTurn), so it is cleared even if the session never sent
// it anything.
func (s *reactions) clearStopped(refs []msgRef) {
	for _, ref := range refs {
		if r := reactionOf(s.st, ref.ID); r != nil && r.State == pipeline.ReactionThinking {
			r.Shown = true
		}
	}
	s.react(refs, pipeline.ReactionNone)
}

func (s *reactions) clearDelay(state pipeline.ReactionState) (time.Duration, bool) {
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
func (s *reactions) queueReaction(c pipeline.ReactionChange) {
	for i := range s.st.ReactionChanges {
		if s.st.ReactionChanges[i].MessageID == c.MessageID && !(i == 0 && s.inFlight) {
			s.st.ReactionChanges[i] = c
			return
		}
	}
	s.st.ReactionChanges = append(s.st.ReactionChanges, c)
}

func (s *reactions) reactionQueued(messageID string) bool {
	for _, c := range s.st.ReactionChanges {
		if c.MessageID == messageID {
			return true
		}
	}
	return false
}

func (s *reactions) unqueueReaction(messageID string) {
	kept := s.st.ReactionChanges[:0]
	for i, c := range s.st.ReactionChanges {
		if c.MessageID != messageID || (i == 0 && s.inFlight) {
			kept = append(kept, c)
		}
	}
	s.st.ReactionChanges = kept
}

// resume restarts the clear and retry timers of a run that continued as
// new.
func (s *reactions) resume() {
	for _, r := range s.st.Reactions {
		if !r.ClearAt.IsZero() {
			s.armClear(r)
		}
		if !r.RetryAt.IsZero() {
			s.armReactionRetry(r)
		}
	}
}

// armClear starts a durable timer that clears r when it fires, unless the
// message moved to another state in the meantime.
func (s *reactions) armClear(r Reaction) {
	if s.v.cost {
		return // runClearer sees r.ClearAt
	}
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
		current := reactionOf(s.st, r.MessageID)
		if current == nil || !current.ClearAt.Equal(r.ClearAt) {
			return
		}
		if late := workflow.Now(ctx).Sub(r.ClearAt); late > lateClear {
			// A worker outage or a long replay held the clear back.
			s.count(MetricReactionsClearedLate, map[string]string{"channel": s.key.Channel})
		}
		current.State, current.ClearAt = pipeline.ReactionNone, time.Time{}
		s.queueReaction(pipeline.ReactionChange{Session: s.key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: pipeline.ReactionNone})
	})
}

// Reaction changes are sent by local activities, which hold the workflow
// task while they run, so each gets one short try; a failed final state is
// tried again later on a durable timer, so a platform that was down still
// ends with every reaction cleared.
const (
	reactionTimeout     = 5 * time.Second
	reactionRetries     = 6
	reactionRetryBase   = 30 * time.Second
	reactionRetryFactor = 2
)

// apply sends reaction changes one at a time, in order. It runs
// only once the main loop has taken every delivered signal, so the changes
// of one workflow step are coalesced before any is sent. A change leaves
// the queue only once tried, so continue-as-new carries the one pending.
func (s *reactions) apply(ctx workflow.Context) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: reactionTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	for {
		err := workflow.Await(ctx, func() bool { return len(s.st.ReactionChanges) > 0 && !s.inboundWaiting() })
		if err != nil {
			return
		}
		change := s.st.ReactionChanges[0]
		s.inFlight = true
		if r := reactionOf(s.st, change.MessageID); r != nil {
			r.Shown = true
		}
		err = workflow.ExecuteLocalActivity(ctx, pipeline.ActivitySetReaction, change).Get(ctx, nil)
		s.inFlight = false
		s.st.ReactionChanges = s.st.ReactionChanges[1:]
		if err != nil {
			s.reactionFailed(change, err)
			continue
		}
		if r := reactionOf(s.st, change.MessageID); r != nil && r.State == pipeline.ReactionNone && change.State == pipeline.ReactionNone {
			dropReaction(s.st, change.MessageID)
		}
	}
}

// reactionFailed logs a change the platform refused and, for a final state
// that may be retried, queues it again after a backoff unless a newer state
// replaced it by then.
func (s *reactions) reactionFailed(change pipeline.ReactionChange, err error) {
	final := change.State == pipeline.ReactionNone || change.State == pipeline.ReactionDone || change.State == pipeline.ReactionError
	retryable := errorType(err) != "PlatformRejected"
	if !final || !retryable || change.Attempt >= reactionRetries {
		// Reactions are a courtesy: this one is given up, visibly.
		s.log.Warn("Reaction not applied; giving up on it", "message_id", change.MessageID, "state", change.State, "attempts", change.Attempt+1, "error", err)
		if r := reactionOf(s.st, change.MessageID); r != nil && r.State == pipeline.ReactionNone {
			dropReaction(s.st, change.MessageID)
		}
		return
	}
	s.log.Warn("Reaction not applied; will try again", "message_id", change.MessageID, "state", change.State, "attempt", change.Attempt+1, "error", err)
	delay := reactionRetryBase
	for range change.Attempt {
		delay *= reactionRetryFactor
	}
	if r := reactionOf(s.st, change.MessageID); r != nil && r.State == change.State {
		r.RetryAt, r.Attempts = workflow.Now(s.ctx).Add(delay), change.Attempt+1
		s.armReactionRetry(*r)
	}
}

// armReactionRetry queues r's state again at r.RetryAt, unless the message
// moved to another state by then.
func (s *reactions) armReactionRetry(r Reaction) {
	delay := r.RetryAt.Sub(workflow.Now(s.ctx))
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		if delay > 0 {
			timer := workflow.NewTimerWithOptions(ctx, delay, workflow.TimerOptions{
				Summary: fmt.Sprintf("retry reaction %q on %s in %s", r.State, r.MessageID, delay),
			})
			if timer.Get(ctx, nil) != nil {
				return
			}
		}
		current := reactionOf(s.st, r.MessageID)
		if current == nil || !current.RetryAt.Equal(r.RetryAt) {
			return
		}
		current.RetryAt = time.Time{}
		if current.State == r.State && !s.reactionQueued(r.MessageID) {
			s.st.ReactionChanges = append(s.st.ReactionChanges, pipeline.ReactionChange{
				Session: s.key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: r.State, Attempt: r.Attempts,
			})
		}
	})
}

// tracked names the message if its reaction is managed here.
func (s *reactions) tracked(messageID string) (msgRef, bool) {
	if r := reactionOf(s.st, messageID); r != nil {
		return msgRef{ID: messageID, Thread: r.ThreadID}, true
	}
	return msgRef{}, false
}

// busy is true while a change is being sent.
func (s *reactions) busy() bool { return s.inFlight }

// pending is true while a message shows a state or a change waits.
func (s *reactions) pending() bool {
	return len(s.st.Reactions) > 0 || len(s.st.ReactionChanges) > 0
}
