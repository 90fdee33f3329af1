package retiring

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// session is one run of the session workflow: the durable State, the run's
// shared environment, and the parts that each own a slice of the State:
//
//   - intake (inbound.go): dedupe, debounce windows, the /queue override;
//   - engagement (engage.go, gate.go): participants, sticky credits,
//     observed context, loop guard, activation, the gate model;
//   - turns (turn.go, queue.go, fallback.go, tools.go): the queue, the
//     running turn, model fallback and cooldowns, tools, delivery, parking;
//   - reactions (reactions.go): reaction states, pending changes, clears
//     and retries;
//   - proposals (proposals.go): tool calls waiting for a decision;
//   - replies (replies.go, feedback.go): direct answers, notices, claims,
//     saved settings, feedback;
//   - visibility (visibility.go): status, search attributes, details, the
//     state query.
//
// Every part keeps to the bounds in bounds.go, and branches on the change
// versions of the run (versions.go) where it behaves differently from code
// that older histories recorded.
//
// A part holds a pointer to its own slice only, so it cannot change
// another's; it reaches another part through the callbacks and narrow
// interfaces that wire sets up. Visibility and the session read the whole
// State; the session writes it only at start, to restore saved settings. The session itself is
// the wiring: its main loop (run) takes signals, starts turns and
// publishes; accept (route.go) and the commands (commands.go) route a
// message or a command to the parts it concerns. Turns, debounce flushes,
// reaction updates and clears run as workflow coroutines that change their
// part's state and wake the main loop.
type session struct {
	runEnv
	st         *State
	inbound    workflow.ReceiveChannel
	retries    workflow.ReceiveChannel
	disengages workflow.ReceiveChannel
	feedback   workflow.ReceiveChannel
	heartbeats workflow.ReceiveChannel
	reloads    workflow.ReceiveChannel
	turns      *turns
	reactions  *reactions
	proposals  *proposals
	replies    *replies
	intake     *intake
	engagement *engagement
	visibility *visibility
	control    *control
	// heartbeatReads counts checklist reads under way, which end of a
	// run waits for.
	heartbeatReads int
	// compacting holds new turns while /compact replaces the transcript,
	// so none reads the old one and writes after the switch.
	compacting bool
	// idleTimer is the run's idle timer while it is armed (idle.go).
	idleTimer workflow.Future
	// movingOn: this run of an older release decided to continue as new
	// to take the newest release (versions.go), and starts no other turn.
	movingOn bool
}

// SessionWorkflow serves one conversation until it has been idle for the
// configured TTL, continuing as new when its history grows large.
func SessionWorkflow(ctx workflow.Context, p SessionParams) error {
	if err := p.Session.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid session key: "+err.Error(), "InvalidSession", err)
	}
	s := &session{
		runEnv: runEnv{
			ctx: ctx,
			key: p.Session,
			log: log.With(workflow.GetLogger(ctx), "session", p.Session.WorkflowID()),
		},
		st:         p.State,
		inbound:    workflow.GetSignalChannel(ctx, SignalInbound),
		retries:    workflow.GetSignalChannel(ctx, SignalRetry),
		disengages: workflow.GetSignalChannel(ctx, SignalDisengage),
		feedback:   workflow.GetSignalChannel(ctx, SignalFeedback),
		heartbeats: workflow.GetSignalChannel(ctx, SignalHeartbeat),
		reloads:    workflow.GetSignalChannel(ctx, SignalReload),
	}
	fresh := s.st == nil
	if fresh {
		s.st = &State{Status: StatusIdle}
	}
	s.counters = &s.st.Counters
	s.wire()
	s.st.Counters.Runs++
	// Handlers come before the first blocking call: an update that
	// arrives with a run's first task (a late double click after
	// continue-as-new) must find its handler, not be refused as unknown.
	if err := workflow.SetQueryHandler(ctx, QueryState, s.visibility.snapshot); err != nil {
		return err
	}
	if err := s.proposals.register(); err != nil {
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
		if s.v.control {
			s.control.restore(s.settings.Saved)
			if s.inbound.Len() > 0 || s.heartbeats.Len() == 0 {
				// Not started by a heartbeat tick alone, which keeps
				// no session alive past its turn.
				s.control.touched()
			}
		}
	} else if s.v.control && s.st.IdleFrom.IsZero() {
		// Carried from a run before changeControl: the idle TTL counts
		// from now, as that run's idle timer would have.
		s.control.touched()
	}
	s.resume()
	workflow.Go(ctx, s.reactions.apply)
	if s.v.cost {
		workflow.Go(ctx, s.reactions.runClearer)
	}
	return s.run()
}

// wire builds the session's parts over its State and connects them: the
// only place where one part learns how to reach another.
func (s *session) wire() {
	s.control = &control{runEnv: &s.runEnv, st: &s.st.ControlState}
	s.reactions = &reactions{
		runEnv:         &s.runEnv,
		st:             &s.st.ReactionsState,
		inboundWaiting: func() bool { return s.inbound.Len() > 0 },
	}
	s.replies = &replies{
		runEnv: &s.runEnv,
		st:     &s.st.RepliesState,
		react:  s.reactions.react,
	}
	s.intake = &intake{
		runEnv:   &s.runEnv,
		st:       &s.st.IntakeState,
		dispatch: func(b Batch) { s.turns.dispatch(b) },
	}
	s.engagement = &engagement{
		runEnv:       &s.runEnv,
		st:           &s.st.EngagementState,
		turnRunning:  func() bool { return s.turns.running() },
		turnSeq:      func() int { return s.turns.seq() },
		isBotMessage: func(id string) bool { return s.turns.isBotMessage(id) },
		forward: func(batch []pipeline.Inbound) {
			s.reactions.react(refsOf(batch...), pipeline.ReactionReceived)
			s.turns.dispatch(Batch{Messages: batch, Queue: s.intake.queueSettings(), NoAnchor: true})
		},
	}
	s.proposals = &proposals{
		runEnv:    &s.runEnv,
		st:        &s.st.ProposalsState,
		decisions: workflow.GetSignalChannel(s.ctx, SignalProposal),
	}
	s.turns = &turns{
		runEnv:        &s.runEnv,
		st:            &s.st.TurnState,
		reactions:     s.reactions,
		engagement:    s.engagement,
		approvals:     s.proposals,
		notice:        s.replies.notice,
		queueSettings: s.intake.queueSettings,
		chat:          s.control,
	}
	s.visibility = &visibility{
		runEnv:           &s.runEnv,
		st:               s.st,
		gating:           s.engagement.busy,
		pendingProposals: s.proposals.pending,
		activation:       s.engagement.activation,
		queueSettings:    s.intake.queueSettings,
		primaryModel:     s.turns.primaryModel,
		heartbeatLine:    s.control.heartbeatLine,
	}
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

// resume restarts the timers a previous run left armed (debounce windows
// and scheduled clears) and the turn it carried, which waits for decisions
// or a retry (turn_progress.go). Nothing else is under way when a run
// continues as new.
func (s *session) resume() {
	s.intake.resume()
	s.engagement.resume()
	s.reactions.resume()
	if s.v.promises {
		s.turns.resumeTurn()
	}
}

// run is the main loop.
func (s *session) run() error {
	for {
		if err := s.takeReloads(); err != nil {
			return err
		}
		s.takeInbound()
		if s.v.promises && s.shouldContinueAsNew() && s.mayCarry() {
			// Before the next turn starts: a chat that never goes quiet
			// still continues as new, carrying its queue.
			if err := s.settle(); err != nil {
				return err
			}
			if s.mayCarry() {
				return s.continueAsNew()
			}
		}
		if !s.movingOn && !s.turns.running() && s.movesOn() {
			// A run of an older release takes the newest between its
			// turns: it starts no other turn, and continues as new at
			// the quiet point that follows (a reaction or a reply in
			// flight finishes first), carrying what it holds.
			s.movingOn = true
		}
		if s.movingOn && s.atQuietPoint() {
			if err := s.settle(); err != nil {
				return err
			}
			if s.atQuietPoint() {
				s.log.Info("Continuing as new to take the newest release of the session")
				return s.continueAsNew()
			}
		}
		if s.turns.ready() && !s.compacting && !s.movingOn && !s.holdsForCarry() {
			s.turns.startTurn()
		}
		s.visibility.updateStatus()
		s.visibility.publish()
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
			return s.inbound.Len() > 0 || s.retries.Len() > 0 || (s.v.promises && s.reloads.Len() > 0) || (s.v.control && s.heartbeats.Len() > 0) || s.proposals.decisions.Len() > 0 || s.disengages.Len() > 0 || s.feedback.Len() > 0 || s.attrsDirty || s.idle() ||
				(s.turns.ready() && !s.compacting && !s.movingOn && !s.holdsForCarry()) || (s.movingOn && s.atQuietPoint()) ||
				(s.shouldContinueAsNew() && s.atQuietPoint()) ||
				(s.v.promises && s.shouldContinueAsNew() && s.mayCarry())
		})
		if err != nil {
			return err
		}
	}
}

// takeInbound accepts every signal delivered so far.
func (s *session) takeInbound() {
	s.proposals.takeSignals()
	for s.disengages.ReceiveAsync(nil) {
		s.engagement.disengage()
	}
	for {
		var f pipeline.Feedback
		if !s.feedback.ReceiveAsync(&f) {
			break
		}
		s.replies.recordFeedback(f)
	}
	for {
		var r RetryRequest
		if !s.retries.ReceiveAsync(&r) {
			break
		}
		s.turns.retry(r)
	}
	for {
		var in pipeline.Inbound
		if !s.inbound.ReceiveAsync(&in) {
			break
		}
		s.accept(in)
	}
	// After the messages: a tick that arrives with a message is skipped
	// for it, as the message would wait for the heartbeat turn otherwise.
	for s.v.control {
		var t pipeline.HeartbeatTick
		if !s.heartbeats.ReceiveAsync(&t) {
			break
		}
		s.takeHeartbeat(t)
	}
}

// idle is true when nothing at all is pending; only an idle session may
// complete.
func (s *session) idle() bool {
	return s.atQuietPoint() && !s.turns.queued() && !s.intake.buffering() && !s.engagement.gatePending() &&
		!s.reactions.pending() && s.inbound.Len() == 0 && s.retries.Len() == 0 && s.proposals.decisions.Len() == 0 && s.feedback.Len() == 0 &&
		(!s.v.control || s.heartbeats.Len() == 0) && (!s.v.promises || s.reloads.Len() == 0)
}

// atQuietPoint is true between turns with no side effect under way: the
// moment to continue as new. Buffers, the queue and scheduled clears are
// carried in State and re-armed by the next run.
func (s *session) atQuietPoint() bool {
	return !s.turns.running() && !s.reactions.busy() && !s.replies.busy() && !s.engagement.busy() && s.heartbeatReads == 0
}

// mayCarry is true where a run that took changePromises may continue as
// new: at a quiet point, or while the turn waits for decisions or is
// parked with nothing of its own under way (the next run resumes it from
// State). Such a turn may hold the run for days while messages keep
// coming, so it must not keep the history from being cut.
func (s *session) mayCarry() bool {
	if !s.turns.running() {
		return s.atQuietPoint()
	}
	return s.turns.carriable() && !s.reactions.busy() && !s.replies.busy() && !s.engagement.busy() && s.heartbeatReads == 0
}

// holdsForCarry is true while a run that took changeMembers waits to
// continue as new: no turn starts then, so a busy chat's next turn waits
// for the reply or reaction still in flight (which finish on their own)
// and starts in the next run, instead of running one more turn here.
func (s *session) holdsForCarry() bool {
	return s.v.members && s.shouldContinueAsNew()
}

// takeReloads reads the settings again when the reload signal asked for
// it (a changed configuration, or an operator's `replyflow reload`):
// before the messages that came with it, so a sender no longer allowed is
// refused at their next message. Runs before changePromises leave the
// signal unread; they take the new settings when they continue as new.
func (s *session) takeReloads() error {
	if !s.v.promises || s.reloads.Len() == 0 {
		return nil
	}
	for {
		var r ReloadRequest
		if !s.reloads.ReceiveAsync(&r) {
			break
		}
		s.log.Info("Reloading the session's settings", "by", r.By, "reason", r.Reason)
	}
	if err := s.loadSettings(); err != nil {
		return err
	}
	s.attrsDirty = true
	return nil
}

// waitWhileIdle waits for work, or for the idle TTL to pass. The timer is
// cancelled as soon as work arrives, so no stale timer lingers in history.
func (s *session) waitWhileIdle() (expired bool, err error) {
	if s.v.cost {
		return s.waitWhileIdleShared()
	}
	timerCtx, cancel := workflow.WithCancel(s.ctx)
	defer cancel()
	wait := s.settings.IdleTTL.D()
	if s.v.control {
		// Counted from the last thing a person did: a heartbeat turn
		// does not keep the session alive.
		if wait = s.control.idleLeft(workflow.Now(s.ctx)); wait <= 0 {
			return true, nil
		}
	}
	timer := workflow.NewTimerWithOptions(timerCtx, wait, workflow.TimerOptions{
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
	if s.movingOn && s.v.members {
		// The last release of this type retires into the chat session
		// workflow, which takes this state as it is (RetiredParams).
		return workflow.NewContinueAsNewError(s.ctx, ChatSessionName, RetiredParams{Session: s.key, Retired: s.st})
	}
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
