package retiring

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// Runs that took changeCost spend fewer billable actions on reactions
// (each local activity batch and each timer is one):
//
//   - A reply's final state rides on the activity that already runs at
//     that moment: the last chunk's delivery sets the messages to done,
//     or clears them when REPLYFLOW_REACTION_CLEAR_DELAY is 0 (carry,
//     carried), where a run without changeCost follows it with a local
//     activity of its own.
//   - The pending clears share one timer (runClearer): when it fires it
//     clears every reaction due within clearShare, where a run without
//     changeCost arms a timer for each reaction.

// clearShare is how early a clear may be done to share the timer of one
// due before it: a done reaction shows for its delay less at most this.
const clearShare = 5 * time.Second

// carry prepares the reactions that the last chunk's delivery sets once
// the chunk is out: state on each of refs. A change for those messages
// still waiting is dropped (the delivery's replaces it) after any in
// flight has finished, so nothing older lands after it.
func (s *reactions) carry(ctx workflow.Context, refs []msgRef, state pipeline.ReactionState) []pipeline.ReactionChange {
	ids := idsOf(refs)
	_ = workflow.Await(ctx, func() bool {
		return !s.inFlight || len(s.st.ReactionChanges) == 0 || !slices.Contains(ids, s.st.ReactionChanges[0].MessageID)
	})
	var out []pipeline.ReactionChange
	for _, ref := range refs {
		if reactionOf(s.st, ref.ID) == nil && len(s.st.Reactions) >= maxReactions {
			continue
		}
		s.unqueueReaction(ref.ID)
		out = append(out, pipeline.ReactionChange{Session: s.key, MessageID: ref.ID, ThreadID: ref.Thread, State: state})
	}
	return out
}

// carried records what the delivery set: the messages show state (and
// its clear is scheduled), except those whose change the platform
// refused, which take the usual way (a local activity, retried later if
// final).
func (s *reactions) carried(changes []pipeline.ReactionChange, failed []string) {
	for _, c := range changes {
		ref := msgRef{ID: c.MessageID, Thread: c.ThreadID}
		if slices.Contains(failed, c.MessageID) {
			s.react([]msgRef{ref}, c.State)
			continue
		}
		r := reactionOf(s.st, c.MessageID)
		if c.State == pipeline.ReactionNone {
			dropReaction(s.st, c.MessageID)
			continue
		}
		if r == nil {
			s.st.Reactions = append(s.st.Reactions, Reaction{MessageID: c.MessageID, ThreadID: c.ThreadID})
			r = &s.st.Reactions[len(s.st.Reactions)-1]
		}
		r.State, r.Shown, r.ClearAt, r.RetryAt, r.Attempts = c.State, true, time.Time{}, time.Time{}, 0
		if delay, ok := s.clearDelay(c.State); ok {
			r.ClearAt = workflow.Now(s.ctx).Add(delay)
		}
	}
}

// doneState is what a delivered reply leaves on its messages: done, or
// nothing when done is not to be shown at all.
func (s *reactions) doneState() pipeline.ReactionState {
	if s.settings.ReactionClearDelay.D() <= 0 {
		return pipeline.ReactionNone
	}
	return pipeline.ReactionDone
}

// nextClear is the earliest clear scheduled, zero when none is.
func (s *reactions) nextClear() time.Time {
	var next time.Time
	for _, r := range s.st.Reactions {
		if !r.ClearAt.IsZero() && (next.IsZero() || r.ClearAt.Before(next)) {
			next = r.ClearAt
		}
	}
	return next
}

// runClearer clears reactions when they are due, with one timer at a
// time for all of them (runs with changeCost). A clear scheduled before
// the one the timer waits for restarts it.
func (s *reactions) runClearer(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return !s.nextClear().IsZero() }); err != nil {
			return
		}
		due := s.nextClear()
		if delay := due.Sub(workflow.Now(ctx)); delay > 0 {
			timerCtx, cancel := workflow.WithCancel(ctx)
			timer := workflow.NewTimerWithOptions(timerCtx, delay, workflow.TimerOptions{
				Summary: fmt.Sprintf("clear %d reaction(s) in %s", s.dueWithin(due.Add(clearShare)), delay.Round(time.Second)),
			})
			err := workflow.Await(ctx, func() bool { return timer.IsReady() || s.nextClear().IsZero() || s.nextClear().Before(due) })
			if err != nil {
				cancel()
				return
			}
			if !timer.IsReady() {
				cancel()
				continue
			}
		}
		now := workflow.Now(ctx)
		for i := range s.st.Reactions {
			r := &s.st.Reactions[i]
			if r.ClearAt.IsZero() || r.ClearAt.After(now.Add(clearShare)) {
				continue
			}
			if late := now.Sub(r.ClearAt); late > lateClear {
				s.count(MetricReactionsClearedLate, map[string]string{"channel": s.key.Channel})
			}
			r.State, r.ClearAt = pipeline.ReactionNone, time.Time{}
			s.queueReaction(pipeline.ReactionChange{Session: s.key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: pipeline.ReactionNone})
		}
	}
}

// dueWithin counts the clears due by at.
func (s *reactions) dueWithin(at time.Time) int {
	n := 0
	for _, r := range s.st.Reactions {
		if !r.ClearAt.IsZero() && !r.ClearAt.After(at) {
			n++
		}
	}
	return n
}
