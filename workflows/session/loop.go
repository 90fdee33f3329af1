package session

import (
	"fmt"
	"strings"

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
	// movingOn: an operator asked this run to continue as new at its
	// next quiet point (the move-on signal). Not carried: the next run is
	// the one it asked for.
	movingOn bool
}

// signals are the session's signal channels, read only by the loop.
type signals struct {
	inbound, retries, disengages, feedback, heartbeats, reloads, decisions, moveOns workflow.ReceiveChannel
}

func signalsOf(ctx workflow.Context) signals {
	return signals{
		inbound:    workflow.GetSignalChannel(ctx, workflows.SignalInbound),
		retries:    workflow.GetSignalChannel(ctx, workflows.SignalRetry),
		disengages: workflow.GetSignalChannel(ctx, workflows.SignalDisengage),
		feedback:   workflow.GetSignalChannel(ctx, workflows.SignalFeedback),
		heartbeats: workflow.GetSignalChannel(ctx, workflows.SignalHeartbeat),
		reloads:    workflow.GetSignalChannel(ctx, workflows.SignalReload),
		decisions:  workflow.GetSignalChannel(ctx, workflows.SignalProposal),
		moveOns:    workflow.GetSignalChannel(ctx, workflows.SignalMoveOn),
	}
}

func (c signals) pending() bool {
	return c.inbound.Len() > 0 || c.retries.Len() > 0 || c.disengages.Len() > 0 || c.feedback.Len() > 0 ||
		c.heartbeats.Len() > 0 || c.reloads.Len() > 0 || c.decisions.Len() > 0 || c.moveOns.Len() > 0
}

// Workflow serves one conversation until it has been idle for the
// configured TTL, continuing as new when its history grows large.
func Workflow(ctx workflow.Context, p Params) error {
	if err := p.Session.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid session key: "+err.Error(), "InvalidSession", err)
	}
	s := &session{
		ctx:     ctx,
		key:     p.Session,
		log:     log.With(workflow.GetLogger(ctx), "session", p.Session.WorkflowID()),
		st:      p.State,
		signals: signalsOf(ctx),
	}
	if p.Retired != nil {
		// A run of the release before (type session, since deleted)
		// continued as new into this one: its state, reshaped.
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

// decision applies a decision taken in the chat and answers it.
func (s *session) decision(env Env, ev DecisionAsked) []Effect {
	var effects []Effect
	var answer string
	err := s.st.Proposals.pressedOn(ev.Decision, ev.Pressed)
	if err == nil {
		effects, answer, err = s.st.Proposals.decide(env, ev.Decision, ev.OwnerVerified)
	}
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

// takeSignals turns every signal delivered so far into an event, in the
// order the parts expect: decisions, then messages, then heartbeats (a
// tick that arrives with a message is skipped for it).
func (s *session) takeSignals() {
	drain(s.signals.moveOns, func(r workflows.MoveOnRequest) {
		if !s.movingOn {
			s.log.Info("Asked to move on: the run continues as new at its next quiet point", "by", r.By, "reason", r.Reason)
		}
		s.movingOn = true
	})
	drain(s.signals.decisions, func(d pipeline.Decision) { s.events = append(s.events, DecisionTaken{Decision: d}) })
	for s.signals.disengages.ReceiveAsync(nil) {
		s.events = append(s.events, Disengaged{})
	}
	drain(s.signals.feedback, func(f pipeline.Feedback) { s.events = append(s.events, FeedbackGiven{Feedback: f}) })
	drain(s.signals.retries, func(r workflows.RetryRequest) { s.events = append(s.events, RetryAsked{By: r.By, Reason: r.Reason}) })
	drain(s.signals.inbound, func(in pipeline.Inbound) { s.events = append(s.events, MessageArrived{In: in}) })
	drain(s.signals.heartbeats, func(t pipeline.HeartbeatTick) { s.events = append(s.events, HeartbeatTicked{Tick: t}) })
}

// drain hands each signal waiting on ch to take, each decoded into a
// value of its own: decoding into the value that held the one before
// would keep, for the next sender, what the signal's JSON leaves out
// when empty (an owner's rights, a thread, the files).
func drain[T any](ch workflow.ReceiveChannel, take func(T)) {
	for {
		var v T
		if !ch.ReceiveAsync(&v) {
			return
		}
		take(v)
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
// the part that answers it. Messages and commands are answered here, the
// turn's events in routeTurn below.
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
	}
	return s.routeTurn(env, ev)
}

// routeTurn answers the turn's events: its model steps, tools and
// delivery, the proposals it makes, and the reactions that follow it.
func (s *session) routeTurn(env Env, ev Event) []Effect {
	st := s.st
	switch ev := ev.(type) {
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

// The session's routes: which parts an accepted message, a command's
// request and a turn's end reach, in order. They read several parts'
// state to decide, as a router does, and change it only through the
// parts' own methods.

// accept routes an accepted message down the ladder every message
// climbs: a claim code, the permission check, a button, a command, the
// engagement decision, the owners-only directives, then 👀 and a
// debounce window (or a batch of its own).
func (s *session) accept(env Env, in pipeline.Inbound) []Effect {
	st := s.st
	if code := strings.TrimSpace(in.Text); pipeline.IsClaimCode(code) {
		return st.Replies.Claim(env, in, code)
	}
	if !st.Engagement.Permitted(env, in) {
		st.Engagement.Deny(env, in)
		return nil
	}
	st.Engagement.See(env, in)
	if in.Action != "" {
		return PressButton(env, in)
	}
	parsed := Parse(env, in.Text)
	st.Control.Touched()
	key, queue := pipeline.BufferKeyOf(in), st.Intake.QueueSettings(env)
	if parsed.Command != "" {
		return append(st.Intake.Close(env, key, queue), Emit{CommandGiven{In: in, Parsed: parsed}})
	}
	facts := TurnFacts{RepliesToBot: in.ReplyTo != "" && st.Turn.IsBotMessage(in.ReplyTo), TurnRunning: st.Turn.Running()}
	result, out := st.Engagement.Engage(env, in, facts)
	if result.Decision != pipeline.DecisionEngage {
		return out
	}
	if refusal := RefuseDirectives(env, in, parsed.Directives, true); refusal != "" {
		out = append(out, st.Intake.Close(env, key, queue)...)
		return append(out, st.Replies.Answer(env, refOf(in), refusal)...)
	}
	out = append(out, st.Reactions.React(env, refsOf(in), pipeline.ReactionReceived)...)
	in.Text = parsed.Text
	settings := parsed.Queue.Apply(queue)
	if parsed.IsDirective() || len(in.Media) > 0 || settings.Debounce <= 0 {
		out = append(out, st.Intake.Close(env, key, queue)...)
		b := Batch{Messages: []pipeline.Inbound{in}, Queue: settings}
		if parsed.Directives.Any() {
			b.Directives = &parsed.Directives
		}
		return append(out, Emit{BatchReady{Batch: b}})
	}
	return append(out, st.Intake.Hold(env, in, settings)...)
}

// command runs a command with what it reads of the other parts.
func (s *session) command(env Env, ev CommandGiven) []Effect {
	st := s.st
	busy := st.Turn.Running() || st.Queue.Queued() || st.Intake.Holding() || st.Engagement.GatePending()
	view := CommandView{
		Saved:      s.saved(env),
		Model:      PrimaryModel(env, st),
		Activation: st.Engagement.Activation(env),
		Status:     StatusInfo(env, st),
		Busy:       busy,
		Observed:   len(st.Engagement.Observed),
	}
	return Command(env, &st.Control, &st.Replies, view, ev.In, ev.Parsed)
}

// saved are the chat's settings as its session entry keeps them.
func (s *session) saved(env Env) pipeline.SessionSettings {
	st := s.st
	return pipeline.SessionSettings{
		ModelOverride: st.Turn.Models.ModelOverride,
		Queue:         st.Intake.QueueOverride,
		Activation:    st.Engagement.ActivationOverride,
	}
}

// stop is /stop: the running turn stops, and everything waiting is
// dropped (the queue, open windows, messages steered into the turn).
func (s *session) stop(env Env) []Effect {
	st := s.st
	unsent, out := st.Intake.DropAll()
	stopped := st.Turn.Running()
	unsent = append(unsent, st.Turn.TakeSteered()...)
	out = append(out, st.Turn.Stop(env, "aborted")...)
	return append(out, st.Queue.Abort(env, stopped, unsent)...)
}

// startTurn starts the next turn when one may start: no turn runs, a
// batch waits, no /compact is replacing the transcript, and the run is
// not about to continue as new.
func (s *session) startTurn(env Env) []Effect {
	st := s.st
	if st.Turn.Running() || !st.Queue.Ready(st.Turn.View()) || st.Replies.Compacting() || s.holdsTurns() {
		return nil
	}
	next, ok := st.Queue.Next(env)
	if !ok {
		return nil
	}
	last := next.Messages[len(next.Messages)-1]
	text := next.Prompt(st.Engagement.EngagedText(env, next.Text, last.ChatType == pipeline.ChatGroup))
	refs := append(refsOf(next.Messages...), next.OverflowRefs...)
	return st.Turn.Begin(env, TurnStart{
		Messages: next.Messages, Refs: refs, Text: text, NoAnchor: next.NoAnchor,
		Options: st.Control.TurnOptions(next.Directives), NewTranscript: next.NewTranscript,
	})
}

// turnEnded tells the other parts a turn is over.
func (s *session) turnEnded(env Env, ev TurnEnded) []Effect {
	st := s.st
	out := turnMetrics(env, ev.Record)
	if ev.Record.Heartbeat {
		outcome := heartbeatOutcome(ev.Record.Outcome)
		out = append(out, Count{Name: workflows.MetricHeartbeats, Tags: map[string]string{"outcome": outcome}})
		return append(out, st.Control.HeartbeatDone(env, st.Control.runningTick(), outcome, ev.Record.TurnID)...)
	}
	st.Control.Touched()
	return out
}

// timerFired routes a timer to the part that armed it.
func (s *session) timerFired(env Env, ev TimerFired) []Effect {
	st := s.st
	switch {
	case WindowTimer(ev.Timer):
		return st.Intake.Fired(env, ev.Timer, st.Intake.QueueSettings(env))
	case ev.Timer == clearTimer:
		return st.Reactions.Fired(env)
	case ev.Timer == gateTimer:
		return st.Engagement.GateFired(env, st.Turn.Running())
	case ev.Timer == proposalsTimer:
		return st.Proposals.Fired(env)
	case ev.Timer == idleTimer:
		s.idleArmed = false // the loop sees whether the TTL passed
		return nil
	case st.Turn.Active != nil && ev.Timer == st.Turn.waitTimer():
		return st.Turn.WaitOver(env)
	}
	return nil
}

// returned routes a Call's answer to the part that asked.
func (s *session) returned(env Env, ev Returned) []Effect {
	st := s.st
	switch {
	case ProposalKey(ev.Key):
		return st.Proposals.Edited(env, ev)
	case GateKey(ev.Key):
		return st.Engagement.Gated(env, ev, st.Intake.QueueSettings(env))
	case RepliesCall(ev.Key):
		return st.Replies.Returned(env, ev)
	case strings.HasPrefix(ev.Key, checklistKey):
		return s.checklistRead(env, ev)
	}
	return nil
}

// delivered routes a delivery: a proposal's message, a direct reply, or
// a chunk of a turn's reply (and the reactions it carried).
func (s *session) delivered(env Env, ev ChunkDelivered) []Effect {
	st := s.st
	switch {
	case ProposalKey(ev.TurnID):
		return st.Proposals.Delivered(env, ev)
	case ReplyDelivery(ev.TurnID):
		return st.Replies.Delivered(env, ev)
	}
	return append(st.Reactions.Delivered(env, ev), st.Turn.Delivered(env, ev)...)
}

// disengage drops the sticky credits: the agent answers again only when
// addressed.
func (s *session) disengage(env Env) []Effect {
	running := ""
	if a := s.st.Turn.Active; a != nil {
		running = a.TurnID
	}
	s.st.Engagement.Disengage(env, running)
	return nil
}

// chatSetting applies a chat setting a command changed, and saves the
// chat's settings in its session entry.
func (s *session) chatSetting(env Env, ev Event) []Effect {
	st := s.st
	switch ev := ev.(type) {
	case NewTranscriptAsked:
		st.Queue.AskNewTranscript()
	case ModelChosen:
		st.Turn.Models.Choose(ev.Model)
	case QueuePatched:
		if ev.Reset {
			st.Intake.ResetQueue()
		} else {
			st.Intake.PatchQueue(ev.Patch)
		}
	case ActivationChosen:
		st.Engagement.SetActivation(ev.Mode)
	}
	return st.Replies.Save(env, st.Control.Saved(s.saved(env)))
}

// ownerClaimed makes a claimant an owner for the rest of the run (the
// store keeps them for the runs after).
func (s *session) ownerClaimed(who string) []Effect {
	s.settings.Owners = append(s.settings.Owners, who)
	return nil
}

// propose posts a proposal for each call a turn wants approved.
func (s *session) propose(env Env, ev ApprovalsWanted) []Effect {
	var out []Effect
	for _, call := range ev.Calls {
		effects, _ := s.st.Proposals.Propose(env, ev.TurnID, call, ev.Origin)
		out = append(out, effects...)
	}
	return out
}

// refusedOrNil is the result a refused call gives the model, nil for an
// approved one.
func refusedOrNil(ev ProposalDecided) *pipeline.ToolResult {
	if refused, ok := ev.Refused(); ok {
		return &refused
	}
	return nil
}
