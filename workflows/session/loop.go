package session

import (
	"fmt"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// maxEventsPerTask bounds the events one pass of the loop answers: an
// effect loop between parts (a part emitting what makes another emit back)
// fails the workflow task loudly instead of spinning.
const maxEventsPerTask = 10_000

// session is one run: the state, the settings, the signal channels, the
// events waiting to be answered and the runner.
type session struct {
	ctx      workflow.Context
	key      pipeline.SessionKey
	log      log.Logger
	settings pipeline.Settings
	st       *State
	signals  signals
	events   []Event
	run      *runner
	// vis is what the search attributes last said (not carried: a new
	// run publishes everything once).
	vis VisibilityState
	// idleArmed: the run's idle timer is armed. It stays armed while
	// turns come and go: one timer a TTL, not one a turn.
	idleArmed bool
	// settingsLoaded: the run read its settings (an update that arrives
	// with the first task is checked for its form only).
	settingsLoaded bool
}

// signals are the session's signal channels, read only by the loop.
type signals struct {
	inbound, retries, disengages, feedback, heartbeats, reloads, decisions workflow.ReceiveChannel
}

func (c signals) pending() bool {
	return c.inbound.Len() > 0 || c.retries.Len() > 0 || c.disengages.Len() > 0 || c.feedback.Len() > 0 ||
		c.heartbeats.Len() > 0 || c.reloads.Len() > 0 || c.decisions.Len() > 0
}

// Workflow serves one conversation until it has been idle for the
// configured TTL, continuing as new when its history grows large.
func Workflow(ctx workflow.Context, p Params) error {
	if err := p.Session.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid session key: "+err.Error(), "InvalidSession", err)
	}
	s := &session{
		ctx: ctx,
		key: p.Session,
		log: log.With(workflow.GetLogger(ctx), "session", p.Session.WorkflowID()),
		st:  p.State,
		signals: signals{
			inbound:    workflow.GetSignalChannel(ctx, workflows.SignalInbound),
			retries:    workflow.GetSignalChannel(ctx, workflows.SignalRetry),
			disengages: workflow.GetSignalChannel(ctx, workflows.SignalDisengage),
			feedback:   workflow.GetSignalChannel(ctx, workflows.SignalFeedback),
			heartbeats: workflow.GetSignalChannel(ctx, workflows.SignalHeartbeat),
			reloads:    workflow.GetSignalChannel(ctx, workflows.SignalReload),
			decisions:  workflow.GetSignalChannel(ctx, workflows.SignalProposal),
		},
	}
	if p.Retired != nil {
		// A run of the retiring session workflow continued as new into
		// this one: its state, reshaped.
		s.st = FromOld(p.Retired)
	}
	fresh := s.st == nil
	if fresh {
		s.st = &State{}
	}
	s.st.Counters.Runs++
	s.run = newRunner(ctx, s.key, &s.settings, func(ev Event) { s.events = append(s.events, ev) })
	// Handlers come before the first blocking call: an update that
	// arrives with a run's first task must find its handler.
	if err := s.register(); err != nil {
		return err
	}
	if err := s.loadSettings(); err != nil {
		return err
	}
	if fresh {
		s.restore()
	} else if s.st.Control.IdleFrom.IsZero() {
		// Carried without a time to count the idle TTL from (started for
		// an update, or by a release that kept none): it counts from now.
		s.st.Control.Touched()
	}
	s.do(s.resume())
	if p.Retired != nil {
		s.do(FromOldResume(s.env(), s.st))
	}
	return s.loop()
}

// register sets the query and update handlers.
func (s *session) register() error {
	if err := workflow.SetQueryHandler(s.ctx, workflows.QueryState, func() (workflows.Snapshot, error) {
		return SnapshotOf(s.env(), s.st, workflow.GetInfo(s.ctx).GetCurrentHistoryLength()), nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(s.ctx, workflows.UpdateDecide,
		func(ctx workflow.Context, d pipeline.Decision) (string, error) {
			// An update that came with the run's first task waits for the
			// settings (the owners) the run is reading.
			if err := workflow.Await(ctx, func() bool { return s.settingsLoaded }); err != nil {
				return "", err
			}
			// What the decision emits wakes the loop, which answers it.
			effects, answer, err := s.st.Proposals.Update(s.env(), d)
			s.do(effects)
			return answer, err
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, d pipeline.Decision) error {
			if !s.settingsLoaded {
				return s.st.Proposals.Known(s.env(), d)
			}
			return s.st.Proposals.Check(s.env(), d, false)
		}})
}

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

// loop takes signals as events, answers every event, and waits for
// more; a run ends at a quiet point: continuing as new when its history
// is long, completing when it has been idle for the TTL.
func (s *session) loop() error {
	for {
		if err := s.takeReloads(); err != nil {
			return err
		}
		s.takeSignals()
		if err := s.answer(); err != nil {
			return err
		}
		if s.shouldContinueAsNew() && s.mayCarry() {
			if end, err := s.settle(s.mayCarry); end || err != nil {
				return cmpErr(err, s.continueAsNew())
			}
			continue
		}
		if s.idle() {
			expired, err := s.waitWhileIdle()
			if err != nil {
				return err
			}
			if expired {
				if end, err := s.settle(s.idle); end || err != nil {
					if err == nil {
						s.log.Info("Session idle past its TTL; completing", "idle_ttl", s.settings.IdleTTL)
					}
					return err
				}
			}
			continue
		}
		if err := workflow.Await(s.ctx, func() bool {
			return len(s.events) > 0 || s.signals.pending() || (s.shouldContinueAsNew() && s.mayCarry())
		}); err != nil {
			return err
		}
	}
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

func (s *session) shouldContinueAsNew() bool {
	info := workflow.GetInfo(s.ctx)
	return info.GetContinueAsNewSuggested() ||
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

// decision applies a decision taken in the chat and answers it.
func (s *session) decision(env Env, ev DecisionAsked) []Effect {
	effects, answer, err := s.st.Proposals.decide(env, ev.Decision, ev.OwnerVerified)
	switch {
	case err != nil && ev.Button:
		return append(effects, Emit{NoticeWanted{MessageID: ev.MessageID, ThreadID: ev.ThreadID, Text: "⚠️ " + err.Error(), To: ev.To, Via: ev.Via}})
	case err != nil:
		return append(effects, Emit{AnswerWanted{MessageID: ev.MessageID, ThreadID: ev.ThreadID, Text: "⚠️ " + err.Error()}})
	case ev.Button:
		return effects
	}
	return append(effects, Emit{AnswerWanted{MessageID: ev.MessageID, ThreadID: ev.ThreadID, Text: answer}})
}

func (s *session) continueAsNew() error {
	s.log.Info("Continuing as new", "history_length", workflow.GetInfo(s.ctx).GetCurrentHistoryLength())
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
	var r workflows.ReloadRequest
	for s.signals.reloads.ReceiveAsync(&r) {
		s.log.Info("Reloading the session's settings", "by", r.By, "reason", r.Reason)
	}
	return s.loadSettings()
}

// takeSignals turns every signal delivered so far into an event, in the
// order the parts expect: decisions, then messages, then heartbeats (a
// tick that arrives with a message is skipped for it).
func (s *session) takeSignals() {
	var d pipeline.Decision
	for s.signals.decisions.ReceiveAsync(&d) {
		s.events = append(s.events, DecisionTaken{Decision: d})
	}
	for s.signals.disengages.ReceiveAsync(nil) {
		s.events = append(s.events, Disengaged{})
	}
	var f pipeline.Feedback
	for s.signals.feedback.ReceiveAsync(&f) {
		s.events = append(s.events, FeedbackGiven{Feedback: f})
	}
	var r workflows.RetryRequest
	for s.signals.retries.ReceiveAsync(&r) {
		s.events = append(s.events, RetryAsked{By: r.By, Reason: r.Reason})
	}
	var in pipeline.Inbound
	for s.signals.inbound.ReceiveAsync(&in) {
		s.events = append(s.events, MessageArrived{In: in})
	}
	var t pipeline.HeartbeatTick
	for s.signals.heartbeats.ReceiveAsync(&t) {
		s.events = append(s.events, HeartbeatTicked{Tick: t})
	}
}

// answer routes the waiting events, oldest first, and those their
// answers emit, until none is left.
func (s *session) answer() error {
	for n := 0; ; n++ {
		if n >= maxEventsPerTask {
			return fmt.Errorf("session %s: more than %d events in one pass; the parts emit each other in a loop", s.key.WorkflowID(), maxEventsPerTask)
		}
		if len(s.events) == 0 {
			// The pass is answered: what waits for its end starts now.
			// A turn first: the ✍️ it asks for replaces a 👀 that is
			// still queued, which then never goes out.
			s.do(s.startTurn(s.env()))
			if len(s.events) == 0 {
				s.do(s.st.Reactions.Apply(s.env()))
			}
			if len(s.events) == 0 {
				break
			}
		}
		ev := s.events[0]
		s.events = s.events[1:]
		s.do(s.route(ev))
	}
	s.publish()
	return nil
}

// do hands effects to the runner; an Emit's event is answered in this
// same pass.
func (s *session) do(effects []Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case Emit:
			s.events = append(s.events, e.Event)
			continue
		case Publish:
			continue // every pass ends publishing what changed
		}
		s.run.start(e)
	}
}

// publish upserts the search attributes that changed, in one event, and
// refreshes the current details the UI shows.
func (s *session) publish() {
	env := s.env()
	if updates := s.vis.Updates(env, s.st); len(updates) > 0 {
		s.run.publish(updates)
	}
	s.run.details(Details(env, s.st))
}

// env is what the parts read for an event answered now.
func (s *session) env() Env {
	return Env{Now: workflow.Now(s.ctx), Key: s.key, Chain: workflow.GetInfo(s.ctx).FirstRunID, Settings: s.settings, Log: s.log}
}

// route is which part answers what: every event the session knows, by
// the part that answers it.
func (s *session) route(ev Event) []Effect {
	env, st := s.env(), s.st
	switch ev := ev.(type) {
	// Messages in: intake, the router, engagement, the queue.
	case MessageArrived:
		return st.Intake.Admit(env, ev.In)
	case MessageAccepted:
		return s.accept(env, ev.In)
	case BatchReady:
		return st.Queue.Dispatch(env, ev.Batch, st.Turn.View())
	case SteeredLeft:
		return st.Queue.Requeue(env, ev.Messages, st.Intake.QueueSettings(env))
	case TimerFired:
		return s.timerFired(env, ev)
	case Returned:
		return s.returned(env, ev)
	case Disengaged, DisengageAsked:
		return s.disengage(env)
	case Answered:
		return st.Engagement.GrantSticky(env, ev.TurnID, ev.Messages, ev.Thread)
	// Commands and chat settings: commands, control, replies.
	case CommandGiven:
		return s.command(env, ev)
	case StopAsked:
		return s.stop(env)
	case NewTranscriptAsked, ModelChosen, QueuePatched, ActivationChosen:
		return s.chatSetting(env, ev)
	case CompactionFinished:
		return st.Turn.Compacted(ev.Compacted)
	case OwnerClaimed:
		return s.ownerClaimed(ev.Who)
	case AnswerWanted:
		return st.Replies.Answer(env, msgRef{ID: ev.MessageID, Thread: ev.ThreadID}, ev.Text)
	case NoticeWanted:
		return st.Replies.Notice(env, ev)
	case FeedbackGiven:
		return st.Replies.RecordFeedback(env, ev.Feedback)
	case HeartbeatTicked:
		return s.heartbeat(env, ev.Tick)
	// The turn: models, tools, delivery.
	case ModelAnswered:
		return st.Turn.Answered(env, ev)
	case ToolRan:
		return st.Turn.ToolDone(env, ev)
	case ChunkDelivered:
		return s.delivered(env, ev)
	case RetryAsked:
		return st.Turn.Retry(env, ev)
	case Steered:
		return st.Turn.Steer(ev.Messages, ev.Backlog)
	case Interrupt:
		return st.Turn.Stop(env, "interrupted")
	case UsageReported:
		return st.Control.AddUsage(ev.Usage)
	case TurnEnded:
		return s.turnEnded(env, ev)
	// Proposals.
	case ApprovalsWanted:
		return s.propose(env, ev)
	case ProposalPosted:
		return st.Turn.Posted(ev.TurnID)
	case ProposalDecided:
		return st.Turn.Decided(env, ev.TurnID, ev.CallID, refusedOrNil(ev))
	case DecisionTaken:
		return st.Proposals.Decide(env, ev.Decision)
	case DecisionAsked:
		return s.decision(env, ev)
	case ButtonPressed:
		return st.Proposals.Press(env, ev.In)
	case WithdrawProposals:
		return st.Proposals.Withdraw(env, ev.TurnID, ev.Reason)
	// Reactions.
	case ReactionsWanted:
		return st.Reactions.React(env, ev.Refs, ev.State)
	case LastChunkReady:
		return st.Reactions.DeliverLast(env, ev)
	case ReactionApplied:
		return st.Reactions.Applied(env, ev)
	}
	s.log.Warn("Event not answered by any part", "event", fmt.Sprintf("%T", ev))
	return nil
}
