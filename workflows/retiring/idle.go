package retiring

import "go.temporal.io/sdk/workflow"

// waitWhileIdleShared is waitWhileIdle for runs that took changeCost: the
// run keeps one idle timer, armed when the session first goes idle for
// the time left until it would complete, and left running while turns
// come and go. A run without changeCost starts a timer of the full TTL
// at each turn and cancels it at the next message, a billable action and
// two events a turn; with it, a busy session starts one timer a TTL (when
// it fires early, the session is not idle long enough yet, and it is
// armed again for what is left).
func (s *session) waitWhileIdleShared() (expired bool, err error) {
	// idleLeft also notes when the session went idle after a person.
	wait := s.control.idleLeft(workflow.Now(s.ctx))
	if wait <= 0 {
		return true, nil
	}
	if s.idleTimer == nil {
		s.idleTimer = workflow.NewTimerWithOptions(s.ctx, wait, workflow.TimerOptions{
			Summary: "idle; the session completes after " + s.settings.IdleTTL.String() + " without a person",
		})
	}
	timer := s.idleTimer
	err = workflow.Await(s.ctx, func() bool {
		return timer.IsReady() || !s.idle() || s.shouldContinueAsNew()
	})
	if err != nil || !timer.IsReady() {
		return false, err
	}
	s.idleTimer = nil
	return s.control.idleLeft(workflow.Now(s.ctx)) <= 0, nil
}
