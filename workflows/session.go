package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// session is one run of the session workflow: the durable State plus the
// run's settings and handles. Its main loop (run) is the only place that
// takes signals, starts turns and publishes search attributes; turns,
// debounce flushes, reaction updates and clears run as workflow coroutines
// that change the State and wake it.
type session struct {
	ctx      workflow.Context
	key      pipeline.SessionKey
	st       *State
	settings pipeline.Settings
	// settingsLoaded is false until the settings local activity answered;
	// handlers registered before it wait for it where settings matter.
	settingsLoaded bool
	// v says which workflow changes this run took (versions.go).
	v       versions
	log     log.Logger
	inbound workflow.ReceiveChannel
	retries workflow.ReceiveChannel
	// decisions carries proposal decisions sent as signals.
	decisions  workflow.ReceiveChannel
	disengages workflow.ReceiveChannel
	feedback   workflow.ReceiveChannel
	// cancelTurn cancels the running turn's model step (interrupt mode).
	cancelTurn workflow.CancelFunc
	// cancelGateTimer cancels the wait of the gated batch, which is then
	// asked at once.
	cancelGateTimer workflow.CancelFunc
	// reactionInFlight and repliesInFlight count side effects under way,
	// which continue-as-new waits for.
	reactionInFlight bool
	repliesInFlight  int
	feedbackInFlight int
	gating           int
	// attrsDirty is set when a search attribute changed; the main loop
	// publishes all changes of one step in one upsert.
	attrsDirty bool
	published  published
}

// SessionWorkflow serves one conversation until it has been idle for the
// configured TTL, continuing as new when its history grows large.
func SessionWorkflow(ctx workflow.Context, p SessionParams) error {
	if err := p.Session.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid session key: "+err.Error(), "InvalidSession", err)
	}
	s := &session{
		ctx:        ctx,
		key:        p.Session,
		st:         p.State,
		log:        log.With(workflow.GetLogger(ctx), "session", p.Session.WorkflowID()),
		inbound:    workflow.GetSignalChannel(ctx, SignalInbound),
		retries:    workflow.GetSignalChannel(ctx, SignalRetry),
		decisions:  workflow.GetSignalChannel(ctx, SignalProposal),
		disengages: workflow.GetSignalChannel(ctx, SignalDisengage),
		feedback:   workflow.GetSignalChannel(ctx, SignalFeedback),
	}
	fresh := s.st == nil
	if fresh {
		s.st = &State{Status: StatusIdle}
	}
	s.st.Counters.Runs++
	// Handlers come before the first blocking call: an update that
	// arrives with a run's first task (a late double click after
	// continue-as-new) must find its handler, not be refused as unknown.
	if err := workflow.SetQueryHandler(ctx, QueryState, s.snapshot); err != nil {
		return err
	}
	if err := s.registerDecisions(); err != nil {
		return err
	}
	s.readVersions()
	if err := s.loadSettings(); err != nil {
		return err
	}
	if fresh {
		// A session that starts again picks up what its entry saved.
		s.st.ModelOverride, s.st.QueueOverride = s.settings.Saved.ModelOverride, s.settings.Saved.Queue
		s.st.ActivationOverride = s.settings.Saved.Activation
	}
	s.resume()
	workflow.Go(ctx, s.applyReactions)
	return s.run()
}

func (s *session) loadSettings() error {
	ctx := workflow.WithLocalActivityOptions(s.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: localActivityTimeout,
		Summary:             "load settings",
	})
	err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivityLoadSettings, s.key).Get(ctx, &s.settings)
	if err != nil {
		return fmt.Errorf("load settings for %s: %w", s.key.WorkflowID(), err)
	}
	s.settingsLoaded = true
	return nil
}

// resume restarts the timers a previous run left armed: debounce windows
// and scheduled clears. (A run continues as new only between turns and with
// no reply in flight, so nothing else is under way.)
func (s *session) resume() {
	now := workflow.Now(s.ctx)
	for i, b := range s.st.Buffers {
		if s.v.hardened && b.FirstAt.IsZero() {
			// Carried from a run without the maximum wait: it counts
			// from now.
			s.st.Buffers[i].FirstAt = now
		}
		s.armFlush(b.Key, b.Gen)
	}
	if len(s.st.GateBuffer) > 0 {
		if s.v.hardened && s.st.GateFirstAt.IsZero() {
			s.st.GateFirstAt = now
		}
		s.armGateFlush(s.st.GateSeq)
	}
	s.rearmClears()
}

// run is the main loop.
func (s *session) run() error {
	for {
		s.takeInbound()
		if s.st.Active == nil && len(s.st.Queue) > 0 {
			s.startTurn()
		}
		s.updateStatus()
		s.publish()
		if s.shouldContinueAsNew() && s.atQuietPoint() {
			if err := s.settle(); err != nil {
				return err
			}
			if s.atQuietPoint() {
				return s.continueAsNew()
			}
			continue
		}
		if s.idle() {
			expired, err := s.waitWhileIdle()
			if err != nil {
				return err
			}
			if expired {
				if err := s.settle(); err != nil {
					return err
				}
				if s.idle() {
					s.log.Info("Session idle past its TTL; completing", "idle_ttl", s.settings.IdleTTL)
					return nil
				}
			}
			continue
		}
		err := workflow.Await(s.ctx, func() bool {
			return s.inbound.Len() > 0 || s.retries.Len() > 0 || s.decisions.Len() > 0 || s.disengages.Len() > 0 || s.feedback.Len() > 0 || s.attrsDirty || s.idle() ||
				(s.st.Active == nil && len(s.st.Queue) > 0) ||
				(s.shouldContinueAsNew() && s.atQuietPoint())
		})
		if err != nil {
			return err
		}
	}
}

// takeInbound accepts every signal delivered so far.
func (s *session) takeInbound() {
	s.takeDecisionSignals()
	for s.disengages.ReceiveAsync(nil) {
		s.disengage()
	}
	for {
		var f pipeline.Feedback
		if !s.feedback.ReceiveAsync(&f) {
			break
		}
		s.recordFeedback(f)
	}
	for {
		var r RetryRequest
		if !s.retries.ReceiveAsync(&r) {
			break
		}
		s.retry(r)
	}
	for {
		var in pipeline.Inbound
		if !s.inbound.ReceiveAsync(&in) {
			return
		}
		s.accept(in)
	}
}

// idle is true when nothing at all is pending; only an idle session may
// complete.
func (s *session) idle() bool {
	return s.atQuietPoint() && len(s.st.Queue) == 0 && len(s.st.Buffers) == 0 && len(s.st.GateBuffer) == 0 &&
		len(s.st.Reactions) == 0 && len(s.st.ReactionChanges) == 0 && s.inbound.Len() == 0 && s.retries.Len() == 0 && s.decisions.Len() == 0 && s.feedback.Len() == 0
}

// retry resumes a parked delivery; with nothing parked it changes nothing.
func (s *session) retry(r RetryRequest) {
	a := s.st.Active
	if a == nil || a.Phase != PhaseParked {
		s.log.Info("Retry ignored: nothing is parked", "by", r.By)
		return
	}
	s.log.Info("Retrying a parked delivery", "turn_id", a.TurnID, "by", r.By, "reason", r.Reason)
	a.RetryRequested = true
}

// atQuietPoint is true between turns with no side effect under way: the
// moment to continue as new. Buffers, the queue and scheduled clears are
// carried in State and re-armed by the next run.
func (s *session) atQuietPoint() bool {
	return s.st.Active == nil && !s.reactionInFlight && s.repliesInFlight == 0 && s.feedbackInFlight == 0 && len(s.st.Replies) == 0 && s.gating == 0
}

// waitWhileIdle waits for work, or for the idle TTL to pass. The timer is
// cancelled as soon as work arrives, so no stale timer lingers in history.
func (s *session) waitWhileIdle() (expired bool, err error) {
	timerCtx, cancel := workflow.WithCancel(s.ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(timerCtx, s.settings.IdleTTL.D(), workflow.TimerOptions{
		Summary: "idle; the session completes after " + s.settings.IdleTTL.String(),
	})
	err = workflow.Await(s.ctx, func() bool {
		return timer.IsReady() || !s.idle() || s.shouldContinueAsNew()
	})
	return err == nil && timer.IsReady(), err
}

func (s *session) shouldContinueAsNew() bool {
	info := workflow.GetInfo(s.ctx)
	return info.GetContinueAsNewSuggested() ||
		(s.settings.MaxHistoryEvents > 0 && info.GetCurrentHistoryLength() >= s.settings.MaxHistoryEvents)
}

// settle prepares the end of a run (continue-as-new or completion) in the
// order of the SDK's safe message handler sample: wait for running update
// handlers, then take every signal delivered so far. The caller then checks
// again that the run may end.
func (s *session) settle() error {
	if err := workflow.Await(s.ctx, func() bool { return workflow.AllHandlersFinished(s.ctx) }); err != nil {
		return err
	}
	s.takeInbound()
	return nil
}

func (s *session) continueAsNew() error {
	s.log.Info("Continuing as new", "history_length", workflow.GetInfo(s.ctx).GetCurrentHistoryLength())
	return workflow.NewContinueAsNewError(s.ctx, WorkflowName, SessionParams{Session: s.key, State: s.st})
}

// errorType is the ApplicationError type of err, or "" for other failures.
func errorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "Timeout"
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "Canceled"
	}
	return ""
}
