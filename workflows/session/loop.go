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
	// publishDue: a part changed what the search attributes show.
	publishDue bool
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
	if s.st == nil {
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
	s.do(s.resume())
	return s.loop()
}

// register sets the query and update handlers.
func (s *session) register() error {
	return workflow.SetQueryHandler(s.ctx, workflows.QueryState, func() (*State, error) { return s.st, nil })
}

func (s *session) loadSettings() error {
	ctx := workflow.WithLocalActivityOptions(s.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: localActivityTimeout,
		Summary:             "load settings",
	})
	if err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivityLoadSettings, s.key).Get(ctx, &s.settings); err != nil {
		return fmt.Errorf("load settings for %s: %w", s.key.WorkflowID(), err)
	}
	return nil
}

// resume starts again what the previous run carried.
func (s *session) resume() []Effect {
	env := s.env()
	out := append(s.st.Intake.Resume(), s.st.Reactions.Resume(env)...)
	out = append(out, s.st.Engagement.Resume(env)...)
	return append(out, s.st.Proposals.Resume(env)...)
}

// loop takes signals as events, answers every event, and waits for more.
func (s *session) loop() error {
	for {
		s.takeSignals()
		if err := s.answer(); err != nil {
			return err
		}
		if err := workflow.Await(s.ctx, func() bool { return len(s.events) > 0 || s.signals.pending() }); err != nil {
			return err
		}
	}
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
	var rl workflows.ReloadRequest
	for s.signals.reloads.ReceiveAsync(&rl) {
		s.events = append(s.events, ReloadAsked{By: rl.By, Reason: rl.Reason})
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
	for n := 0; len(s.events) > 0; n++ {
		if n >= maxEventsPerTask {
			return fmt.Errorf("session %s: more than %d events in one pass; the parts emit each other in a loop", s.key.WorkflowID(), maxEventsPerTask)
		}
		ev := s.events[0]
		s.events = s.events[1:]
		s.do(s.route(ev))
	}
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
			s.publishDue = true
			continue
		}
		s.run.start(e)
	}
}

// env is what the parts read for an event answered now.
func (s *session) env() Env {
	return Env{Now: workflow.Now(s.ctx), Key: s.key, Settings: s.settings, Log: s.log}
}

// route is which part answers what.
func (s *session) route(ev Event) []Effect {
	env, st := s.env(), s.st
	switch ev := ev.(type) {
	case MessageArrived:
		return st.Intake.Admit(env, ev.In)
	case TimerFired:
		switch {
		case WindowTimer(ev.Timer):
			return st.Intake.Fired(env, ev.Timer, st.Intake.QueueSettings(env))
		case ev.Timer == clearTimer:
			return st.Reactions.Fired(env)
		case ev.Timer == gateTimer:
			return st.Engagement.GateFired(env, st.Turn.Running())
		case ev.Timer == proposalsTimer:
			return st.Proposals.Fired(env)
		case st.Turn.Active != nil && ev.Timer == st.Turn.waitTimer():
			return st.Turn.WaitOver(env)
		}
	case ApprovalsWanted:
		var out []Effect
		for _, call := range ev.Calls {
			effects, _ := st.Proposals.Propose(env, ev.TurnID, call, ev.Origin)
			out = append(out, effects...)
		}
		return out
	case ProposalDecided:
		refused, isRefused := ev.Refused()
		if !isRefused {
			return st.Turn.Decided(env, ev.TurnID, ev.CallID, nil)
		}
		return st.Turn.Decided(env, ev.TurnID, ev.CallID, &refused)
	case DecisionTaken:
		return st.Proposals.Decide(env, ev.Decision)
	case ButtonPressed:
		return st.Proposals.Press(env, ev.In)
	case WithdrawProposals:
		return st.Proposals.Withdraw(env, ev.TurnID, ev.Reason)
	case Returned:
		switch {
		case ProposalKey(ev.Key):
			return st.Proposals.Edited(env, ev)
		case GateKey(ev.Key):
			return st.Engagement.Gated(env, ev, st.Intake.QueueSettings(env))
		case RepliesCall(ev.Key):
			return st.Replies.Returned(env, ev)
		}
	case BatchReady:
		return st.Queue.Dispatch(env, ev.Batch, st.Turn.View())
	case Steered:
		st.Turn.Steer(ev.Messages)
		return nil
	case Interrupt:
		return st.Turn.Stop(env, "interrupted")
	case EngageReactions:
		return st.Reactions.React(env, ev.Refs, ev.State)
	case CommandReactions:
		return st.Reactions.React(env, ev.Refs, ev.State)
	case NoticeWanted:
		return st.Replies.Notice(env, ev)
	case FeedbackGiven:
		return st.Replies.RecordFeedback(env, ev.Feedback)
	case UsageReported:
		st.Control.AddUsage(ev.Usage)
		return nil
	case ModelAnswered:
		return st.Turn.Answered(env, ev)
	case ToolRan:
		return st.Turn.ToolDone(env, ev)
	case ChunkDelivered:
		switch {
		case ProposalKey(ev.TurnID):
			return st.Proposals.Delivered(env, ev)
		case ReplyDelivery(ev.TurnID):
			return st.Replies.Delivered(env, ev)
		}
		return append(st.Reactions.Delivered(env, ev), st.Turn.Delivered(env, ev)...)
	case RetryAsked:
		return st.Turn.Retry(env, ev)
	case ReactionsWanted:
		return st.Reactions.React(env, ev.Refs, ev.State)
	case LastChunkReady:
		return st.Reactions.DeliverLast(env, ev)
	case ReactionApplied:
		return st.Reactions.Applied(env, ev)
	}
	s.log.Debug("Event not answered by any part", "event", fmt.Sprintf("%T", ev))
	return nil
}
