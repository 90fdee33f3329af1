package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// Reactions' bounds and pacing.
const (
	// maxReactions bounds the messages whose reaction the session tracks.
	maxReactions = 200
	// clearShare: clears due within this much of the first share its
	// timer.
	clearShare = 5 * time.Second
	// reactionRetries is how often a final reaction (done, error, none)
	// that failed for a reason worth retrying is tried again, waiting
	// reactionRetryBase, doubled each time.
	reactionRetries   = 6
	reactionRetryBase = 30 * time.Second
	// lateClear is how late a clear may run before it counts as late
	// (workflows.MetricReactionsClearedLate): a timer fires within
	// seconds, so a minute means the session could not run.
	lateClear = time.Minute
)

// clearTimer is the one timer all scheduled clears share.
const clearTimer TimerID = "clear"

// ReactionsState is the reactions part: the reaction each tracked user
// message shows (or should), the changes waiting to be applied (one at a
// time, in order), and what the last chunk of a reply carries.
type ReactionsState struct {
	Reactions []Reaction                `json:"reactions,omitempty"`
	Changes   []pipeline.ReactionChange `json:"changes,omitempty"`
	// Applying: Changes[0] is being applied. A run continues as new only
	// when nothing is.
	Applying bool `json:"applying,omitempty"`
	// Carried are the changes a reply's last chunk sets, by its turn.
	Carried *CarriedReactions `json:"carried,omitempty"`
	// Held is a last chunk that waits for a change of its messages being
	// applied (DeliverLast).
	Held *LastChunkReady `json:"held,omitempty"`
	// ClearArmedAt is when the clear timer fires, zero when disarmed.
	ClearArmedAt time.Time `json:"clear_armed_at,omitzero"`
}

// Reaction is where one user message's reaction stands.
type Reaction struct {
	MessageID string                 `json:"message_id"`
	ThreadID  string                 `json:"thread_id,omitempty"`
	State     pipeline.ReactionState `json:"state"`
	// Shown: a change of this message reached (or went to) the platform.
	Shown    bool      `json:"shown,omitempty"`
	ClearAt  time.Time `json:"clear_at,omitzero"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
	Attempts int       `json:"attempts,omitempty"`
}

// CarriedReactions are the changes a reply's last chunk sets once out.
type CarriedReactions struct {
	TurnID  string                    `json:"turn_id"`
	Index   int                       `json:"index"`
	Changes []pipeline.ReactionChange `json:"changes"`
}

// React sets refs to state: a change is queued where the platform shows
// something else; ✍️ is shown by the model step itself, so a queued
// change is dropped instead; done and error schedule their clear.
func (s *ReactionsState) React(env Env, refs []msgRef, state pipeline.ReactionState) []Effect {
	s.react(env, refs, state)
	return s.next(env)
}

func (s *ReactionsState) react(env Env, refs []msgRef, state pipeline.ReactionState) {
	for _, ref := range refs {
		r := s.reaction(ref.ID)
		if r == nil {
			if len(s.Reactions) >= maxReactions {
				env.logger().Warn("Reaction not shown: the session tracks too many reactions already", "message_id", ref.ID, "tracked", len(s.Reactions))
				continue
			}
			s.Reactions = append(s.Reactions, Reaction{MessageID: ref.ID, ThreadID: ref.Thread})
			r = &s.Reactions[len(s.Reactions)-1]
		}
		unchanged := r.State == state && r.Shown && !s.queued(ref.ID)
		r.State, r.ClearAt, r.RetryAt, r.Attempts = state, time.Time{}, time.Time{}, 0
		switch {
		case unchanged:
		case state == pipeline.ReactionThinking:
			s.unqueue(ref.ID)
		case state == pipeline.ReactionNone && !r.Shown:
			s.unqueue(ref.ID)
			s.drop(ref.ID)
		default:
			s.queue(pipeline.ReactionChange{Session: env.Key, MessageID: ref.ID, ThreadID: ref.Thread, State: state})
		}
		if delay, ok := clearDelay(env, state); ok {
			if r := s.reaction(ref.ID); r != nil {
				r.ClearAt = env.Now.Add(delay)
			}
		}
	}
}

// ClearStopped clears refs of a stopped turn: ✍️, which the model step
// showed without a change of the session's, is cleared too.
func (s *ReactionsState) ClearStopped(env Env, refs []msgRef) []Effect {
	for _, ref := range refs {
		if r := s.reaction(ref.ID); r != nil && r.State == pipeline.ReactionThinking {
			r.Shown = true
		}
	}
	return s.React(env, refs, pipeline.ReactionNone)
}

// DoneState is what an answered message shows: done, or nothing at once
// when done is never shown (REPLYFLOW_REACTION_CLEAR_DELAY=0).
func DoneState(env Env) pipeline.ReactionState {
	if env.Settings.ReactionClearDelay.D() <= 0 {
		return pipeline.ReactionNone
	}
	return pipeline.ReactionDone
}

func clearDelay(env Env, state pipeline.ReactionState) (time.Duration, bool) {
	switch state {
	case pipeline.ReactionDone:
		return env.Settings.ReactionClearDelay.D(), true
	case pipeline.ReactionError:
		return env.Settings.ErrorClearDelay.D(), true
	}
	return 0, false
}

// Carry hands the last chunk of a reply the changes it sets once out
// (refs to state), taking them off the queue. It holds the delivery
// (false) while a change of one of refs is being applied: the chunk's
// change must land after it.
func (s *ReactionsState) Carry(env Env, d *Deliver, refs []msgRef, state pipeline.ReactionState) bool {
	if s.Applying && len(s.Changes) > 0 && slices.ContainsFunc(refs, func(r msgRef) bool { return r.ID == s.Changes[0].MessageID }) {
		return false
	}
	var changes []pipeline.ReactionChange
	for _, ref := range refs {
		if s.reaction(ref.ID) == nil && len(s.Reactions) >= maxReactions {
			continue
		}
		s.unqueue(ref.ID)
		changes = append(changes, pipeline.ReactionChange{Session: env.Key, MessageID: ref.ID, ThreadID: ref.Thread, State: state})
	}
	d.Delivery.ThenReact = changes
	s.Carried = &CarriedReactions{TurnID: d.TurnID, Index: d.Delivery.Index, Changes: changes}
	return true
}

// DeliverLast answers LastChunkReady: the chunk goes out carrying the
// done reaction, or waits for the change of its messages being applied.
func (s *ReactionsState) DeliverLast(env Env, ev LastChunkReady) []Effect {
	d := ev.Deliver
	if !s.Carry(env, &d, ev.Refs, ev.State) {
		s.Held = &ev
		return nil
	}
	s.Held = nil
	return []Effect{d}
}

// Delivered answers the ChunkDelivered of a chunk that carried changes:
// those the platform refused are queued the usual way; the others are
// shown. A chunk whose delivery failed leaves them carried for its
// retry.
func (s *ReactionsState) Delivered(env Env, ev ChunkDelivered) []Effect {
	c := s.Carried
	if c == nil || c.TurnID != ev.TurnID || c.Index != ev.Index || ev.Failure != nil {
		return nil
	}
	s.Carried = nil
	if len(ev.Delivered.Rest) > 0 {
		// The reply was longer than one chunk: its last chunk carries
		// them (LastChunkReady again).
		return nil
	}
	for _, ch := range c.Changes {
		ref := msgRef{ID: ch.MessageID, Thread: ch.ThreadID}
		if slices.Contains(ev.Delivered.ReactionsFailed, ch.MessageID) {
			s.react(env, []msgRef{ref}, ch.State)
			continue
		}
		if ch.State == pipeline.ReactionNone {
			s.drop(ch.MessageID)
			continue
		}
		r := s.reaction(ch.MessageID)
		if r == nil {
			s.Reactions = append(s.Reactions, Reaction{MessageID: ch.MessageID, ThreadID: ch.ThreadID})
			r = &s.Reactions[len(s.Reactions)-1]
		}
		r.State, r.Shown, r.RetryAt, r.Attempts = ch.State, true, time.Time{}, 0
		r.ClearAt = time.Time{}
		if delay, ok := clearDelay(env, ch.State); ok {
			r.ClearAt = env.Now.Add(delay)
		}
	}
	return s.next(env)
}

// Applied answers ReactionApplied: the next change goes out; a final
// change that failed for a reason worth retrying is tried again later.
func (s *ReactionsState) Applied(env Env, ev ReactionApplied) []Effect {
	s.Applying = false
	if len(s.Changes) > 0 {
		s.Changes = s.Changes[1:]
	}
	var out []Effect
	if held := s.Held; held != nil {
		// The change the last chunk waited for has landed.
		out = s.DeliverLast(env, *held)
	}
	return append(out, s.applied(env, ev)...)
}

func (s *ReactionsState) applied(env Env, ev ReactionApplied) []Effect {
	change := ev.Change
	if ev.Failure == nil {
		if r := s.reaction(change.MessageID); r != nil && r.State == pipeline.ReactionNone && change.State == pipeline.ReactionNone {
			s.drop(change.MessageID)
		}
		return s.next(env)
	}
	final := change.State == pipeline.ReactionNone || change.State == pipeline.ReactionDone || change.State == pipeline.ReactionError
	if !final || ev.Failure.Type == "PlatformRejected" || change.Attempt >= reactionRetries {
		env.logger().Warn("Reaction not applied; giving up on it", "message_id", change.MessageID, "state", change.State, "attempts", change.Attempt+1, "error", ev.Failure)
		if r := s.reaction(change.MessageID); r != nil && r.State == pipeline.ReactionNone {
			s.drop(change.MessageID)
		}
		return s.next(env)
	}
	env.logger().Warn("Reaction not applied; will try again", "message_id", change.MessageID, "state", change.State, "attempt", change.Attempt+1, "error", ev.Failure)
	delay := reactionRetryBase << change.Attempt
	if r := s.reaction(change.MessageID); r != nil && r.State == change.State {
		r.RetryAt, r.Attempts = env.Now.Add(delay), change.Attempt+1
	}
	return s.next(env)
}

// Fired answers the clear timer: every clear due (within clearShare)
// becomes a change, every retry due is queued again.
func (s *ReactionsState) Fired(env Env) []Effect {
	s.ClearArmedAt = time.Time{}
	var late []Effect
	for i := range s.Reactions {
		r := &s.Reactions[i]
		if !r.RetryAt.IsZero() && !r.RetryAt.After(env.Now.Add(clearShare)) {
			r.RetryAt = time.Time{}
			if !s.queued(r.MessageID) {
				s.Changes = append(s.Changes, pipeline.ReactionChange{Session: env.Key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: r.State, Attempt: r.Attempts})
			}
		}
		if !r.ClearAt.IsZero() && !r.ClearAt.After(env.Now.Add(clearShare)) {
			if env.Now.Sub(r.ClearAt) > lateClear {
				late = append(late, Count{Name: workflows.MetricReactionsClearedLate, Tags: map[string]string{"channel": env.Key.Channel}})
			}
			r.State, r.ClearAt = pipeline.ReactionNone, time.Time{}
			s.queue(pipeline.ReactionChange{Session: env.Key, MessageID: r.MessageID, ThreadID: r.ThreadID, State: pipeline.ReactionNone})
		}
	}
	return append(late, s.next(env)...)
}

// Apply starts the first queued change, unless one is being applied.
// The loop calls it once every event of a pass is answered, not at each
// change: a 👀 that a turn starting in the same pass replaces with ✍️
// never reaches the platform.
func (s *ReactionsState) Apply(env Env) []Effect {
	if s.Applying || len(s.Changes) == 0 {
		return nil
	}
	s.Applying = true
	if r := s.reaction(s.Changes[0].MessageID); r != nil {
		r.Shown = true
	}
	return []Effect{ApplyReaction{Change: s.Changes[0]}}
}

// next is what the part starts after any change of its state: the clear
// timer at the next clear or retry.
func (s *ReactionsState) next(env Env) []Effect {
	var out []Effect
	due := s.nextDue()
	switch {
	case due.IsZero() && !s.ClearArmedAt.IsZero():
		s.ClearArmedAt = time.Time{}
		out = append(out, Disarm{Timer: clearTimer})
	case !due.IsZero() && !due.Equal(s.ClearArmedAt):
		s.ClearArmedAt = due
		out = append(out, Arm{Timer: clearTimer, At: due, Summary: fmt.Sprintf("clear %d reaction(s)", s.dueWithin(due.Add(clearShare)))})
	}
	return out
}

// Resume starts again what a previous run carried: the clear timer.
func (s *ReactionsState) Resume(env Env) []Effect {
	s.ClearArmedAt = time.Time{}
	s.Applying = false
	return s.next(env)
}

// Busy is true while a change is being applied.
func (s *ReactionsState) Busy() bool { return s.Applying }

// ForgetStaleThinking drops the tracked messages that no turn answers any
// more and whose ✍️ only a model step showed: thinking, never shown by
// the session, nothing scheduled or queued, and not among keep (the refs
// of a turn still under way). A turn that ends with no reaction of the
// session's own (a silent one, whose activity cleared ✍️ itself) leaves
// such entries behind; kept, they would keep the session from going idle
// and fill maxReactions. It returns how many it dropped.
func (s *ReactionsState) ForgetStaleThinking(keep []msgRef) int {
	n := len(s.Reactions)
	s.Reactions = slices.DeleteFunc(s.Reactions, func(r Reaction) bool {
		return r.State == pipeline.ReactionThinking && !r.Shown && r.ClearAt.IsZero() && r.RetryAt.IsZero() && !s.queued(r.MessageID) &&
			!slices.ContainsFunc(keep, func(ref msgRef) bool { return ref.ID == r.MessageID })
	})
	return n - len(s.Reactions)
}

// Pending is true while a message shows (or waits to show) a reaction.
func (s *ReactionsState) Pending() bool { return len(s.Reactions) > 0 || len(s.Changes) > 0 }

// Tracked is a tracked message's ref.
func (s *ReactionsState) Tracked(id string) (msgRef, bool) {
	if r := s.reaction(id); r != nil {
		return msgRef{ID: id, Thread: r.ThreadID}, true
	}
	return msgRef{}, false
}

func (s *ReactionsState) nextDue() time.Time {
	var next time.Time
	for _, r := range s.Reactions {
		for _, at := range []time.Time{r.ClearAt, r.RetryAt} {
			if !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return next
}

func (s *ReactionsState) dueWithin(at time.Time) int {
	n := 0
	for _, r := range s.Reactions {
		if !r.ClearAt.IsZero() && !r.ClearAt.After(at) {
			n++
		}
	}
	return n
}

// queue adds a change, or replaces the waiting one of the same message
// (never the one being applied).
func (s *ReactionsState) queue(c pipeline.ReactionChange) {
	for i := range s.Changes {
		if s.Changes[i].MessageID == c.MessageID && !(i == 0 && s.Applying) {
			s.Changes[i] = c
			return
		}
	}
	s.Changes = append(s.Changes, c)
}

func (s *ReactionsState) queued(id string) bool {
	return slices.ContainsFunc(s.Changes, func(c pipeline.ReactionChange) bool { return c.MessageID == id })
}

func (s *ReactionsState) unqueue(id string) {
	kept := s.Changes[:0]
	for i, c := range s.Changes {
		if c.MessageID != id || (i == 0 && s.Applying) {
			kept = append(kept, c)
		}
	}
	s.Changes = kept
}

func (s *ReactionsState) reaction(id string) *Reaction {
	for i := range s.Reactions {
		if s.Reactions[i].MessageID == id {
			return &s.Reactions[i]
		}
	}
	return nil
}

func (s *ReactionsState) drop(id string) {
	s.Reactions = slices.DeleteFunc(s.Reactions, func(r Reaction) bool { return r.MessageID == id })
}
