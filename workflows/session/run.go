package session

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/workflows"
)

// A run's life: the settings it reads when it starts and when asked to
// reload, what it resumes of the run before, when it may continue as new
// or end, and its idle timer.

// loadSettings reads the session's settings: the worker's configuration
// and the session's entry.
func (s *session) loadSettings() error {
	settings, err := s.run.loadSettings()
	if err != nil {
		return fmt.Errorf("load settings for %s: %w", s.key.WorkflowID(), err)
	}
	s.settings, s.settingsLoaded = settings, true
	return nil
}

// restore gives a session that starts afresh what its entry saved: its
// /model, /queue and /activation choices and its chat settings. A
// session started by a heartbeat tick alone does not count as a
// person's doing, which would keep it alive past its turn.
func (s *session) restore() {
	saved := s.settings.Saved
	s.st.Turn.Models.ModelOverride = saved.ModelOverride
	s.st.Intake.QueueOverride = saved.Queue
	s.st.Engagement.ActivationOverride = saved.Activation
	s.st.Control.Restore(saved)
	if s.signals.inbound.Len() > 0 || s.signals.heartbeats.Len() == 0 {
		s.st.Control.Touched()
	}
}

// resume starts again what the previous run carried.
func (s *session) resume() []Effect {
	env := s.env()
	out := append(s.st.Intake.Resume(), s.st.Reactions.Resume(env)...)
	out = append(out, s.st.Engagement.Resume(env)...)
	return append(out, s.st.Proposals.Resume(env)...)
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// settle prepares the end of a run in the order of the SDK's safe
// message handler sample: running update handlers finish, then every
// signal delivered so far is answered; the run ends only if still may
// says so after that.
func (s *session) settle(still func() bool) (bool, error) {
	if err := workflow.Await(s.ctx, func() bool { return workflow.AllHandlersFinished(s.ctx) }); err != nil {
		return false, err
	}
	s.takeSignals()
	if err := s.answer(); err != nil {
		return false, err
	}
	return still(), nil
}

// quiet is true with nothing of the session's own under way: no effect
// runs, so continue-as-new loses nothing (windows, the queue and
// scheduled clears are carried in State and re-armed by the next run).
func (s *session) quiet() bool {
	return !s.run.Busy() && len(s.events) == 0 && !s.st.Reactions.Busy() && !s.st.Replies.Busy() &&
		!s.st.Engagement.Busy() && !s.st.Control.ReadingChecklists()
}

// mayCarry is true where the run may continue as new: at a quiet point
// between turns, or while the turn waits for something only a person
// gives (decisions, a retry), which may take days in a busy chat.
func (s *session) mayCarry() bool {
	if !s.quiet() {
		return false
	}
	a := s.st.Turn.Active
	return a == nil || a.Carriable()
}

// holdsTurns: a run that should continue as new starts no other turn,
// so a busy chat reaches its quiet point; the next run starts it.
func (s *session) holdsTurns() bool { return s.shouldContinueAsNew() }

// idle is true when nothing at all is pending; only an idle session may
// complete.
func (s *session) idle() bool {
	st := s.st
	return s.quiet() && !st.Turn.Running() && !st.Queue.Queued() && !st.Intake.Holding() && !st.Engagement.GatePending() &&
		!st.Reactions.Pending() && st.Proposals.Pending() == 0 && !s.signals.pending()
}

// shouldContinueAsNew: the run's history is long, or an operator asked
// it to move on.
func (s *session) shouldContinueAsNew() bool {
	info := workflow.GetInfo(s.ctx)
	return s.movingOn || info.GetContinueAsNewSuggested() ||
		(s.settings.MaxHistoryEvents > 0 && info.GetCurrentHistoryLength() >= s.settings.MaxHistoryEvents)
}

// idleTimer is the run's idle timer.
const idleTimer TimerID = "idle"

// waitWhileIdle waits for work, or for the idle TTL (counted from the
// last thing a person did) to pass.
func (s *session) waitWhileIdle() (expired bool, err error) {
	env := s.env()
	left := s.st.Control.IdleLeft(env)
	if left <= 0 {
		return true, nil
	}
	if !s.idleArmed {
		s.idleArmed = true
		s.run.start(Arm{Timer: idleTimer, At: env.Now.Add(left), Summary: "idle; the session completes after " + s.settings.IdleTTL.String() + " without a person"})
	}
	return false, workflow.Await(s.ctx, func() bool { return len(s.events) > 0 || s.signals.pending() || s.shouldContinueAsNew() })
}

func (s *session) continueAsNew() error {
	s.log.Info("Continuing as new", "history_length", workflow.GetInfo(s.ctx).GetCurrentHistoryLength(), "asked", s.movingOn)
	// What this run carries only: the run replays as it ran, and the
	// next one starts without what no turn answers any more.
	var keep []msgRef
	if a := s.st.Turn.Active; a != nil {
		keep = a.Refs
	}
	if n := s.st.Reactions.ForgetStaleThinking(keep); n > 0 {
		s.log.Info("Left behind the reactions no turn answers any more", "forgotten", n)
	}
	return workflow.NewContinueAsNewError(s.ctx, WorkflowName, Params{Session: s.key, State: s.st})
}

// takeReloads reads the settings again when the reload signal asked for
// it (a changed configuration, `replyflow reload`): before the messages
// that came with it, so a sender no longer allowed is refused at their
// next message.
func (s *session) takeReloads() error {
	if s.signals.reloads.Len() == 0 {
		return nil
	}
	drain(s.signals.reloads, func(r workflows.ReloadRequest) {
		s.log.Info("Reloading the session's settings", "by", r.By, "reason", r.Reason)
	})
	return s.loadSettings()
}
