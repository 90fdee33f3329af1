package session

import (
	"strings"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// The session's routes: which parts an accepted message, a command's
// request, a turn's end and a heartbeat tick reach, in order. They read
// several parts' state to decide, as a router does, and change it only
// through the parts' own methods.

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
	var unsent []pipeline.Inbound
	var out []Effect
	for len(st.Intake.Buffers) > 0 {
		b := st.Intake.Buffers[0]
		unsent = append(unsent, b.Messages...)
		st.Intake.Buffers = st.Intake.Buffers[1:]
		out = append(out, Disarm{Timer: windowTimer(b.Gen)})
	}
	stopped := st.Turn.Running()
	if a := st.Turn.Active; a != nil {
		unsent = append(unsent, a.Steered...)
		a.Steered = nil
	}
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

// heartbeatOutcome is what a heartbeat turn's outcome means to /status.
func heartbeatOutcome(turnOutcome string) string {
	switch turnOutcome {
	case outcomeHeartbeatOK, outcomeSilent:
		return HeartbeatAcked
	case outcomeAnswered:
		return HeartbeatDelivered
	case outcomeMuted:
		return HeartbeatMuted
	case "failed", "delivery_failed":
		return HeartbeatFailed
	}
	return "stopped (" + turnOutcome + ")"
}

// checklistKey names the heartbeat checklist read of a tick.
const checklistKey = "heartbeat/checklist/"

// heartbeat handles a tick: once per tick ID, and only in a quiet
// session. The checklist is read first (it may have changed since the
// last tick); an empty one, or a session that became busy meanwhile,
// skips the tick.
func (s *session) heartbeat(env Env, t pipeline.HeartbeatTick) []Effect {
	out, fresh := s.st.Control.NewTick(env, t)
	if !fresh {
		return out
	}
	if s.busyForHeartbeat() {
		return append(out, s.st.Control.HeartbeatDone(env, t.ID, HeartbeatSkippedBusy, "")...)
	}
	if len(s.st.Control.Ticks) >= heartbeatTicksKept {
		return append(out, s.st.Control.HeartbeatDone(env, t.ID, HeartbeatSkippedBusy, "")...)
	}
	s.st.Control.Ticks = append(s.st.Control.Ticks, t)
	return append(out, Call{
		Key: checklistKey + t.ID, Activity: pipeline.ActivityReadHeartbeatChecklist, Args: []any{env.Key},
		Output: new(string), Summary: "read the heartbeat checklist", Attempts: 3,
	})
}

// checklistRead starts the heartbeat turn of a tick whose checklist came.
func (s *session) checklistRead(env Env, ev Returned) []Effect {
	st := s.st
	t, ok := st.Control.takeTick(strings.TrimPrefix(ev.Key, checklistKey))
	if !ok {
		return nil
	}
	var checklist string
	if ev.Failure == nil {
		checklist = *ev.Output.(*string)
	}
	switch {
	case ev.Failure != nil:
		env.logger().Error("Heartbeat checklist not read; the tick is skipped", "tick", t.ID, "error", ev.Failure)
		return st.Control.HeartbeatDone(env, t.ID, HeartbeatFailed+": the checklist could not be read ("+ev.Failure.Type+")", "")
	case checklist == "":
		return st.Control.HeartbeatDone(env, t.ID, HeartbeatSkippedEmpty, "")
	case s.busyForHeartbeat():
		return st.Control.HeartbeatDone(env, t.ID, HeartbeatSkippedBusy, "")
	}
	o := st.Control.TurnOptions(nil)
	o.Verbose = false // tool lines would speak where the heartbeat stays silent
	msg := pipeline.Inbound{
		Channel: env.Key.Channel, Account: env.Key.Account, ChatID: env.Key.Chat,
		MessageID: "heartbeat/" + t.ID, SenderID: "heartbeat", SenderName: "heartbeat",
		Text: pipeline.RenderHeartbeatPrompt(checklist, t.ScheduledAt), ReceivedAt: t.ScheduledAt,
	}
	st.Control.RunningTick = t.ID
	return st.Turn.Begin(env, TurnStart{
		Messages: []pipeline.Inbound{msg}, Text: msg.Text, NoAnchor: true, Options: o,
		NewTranscript: st.Queue.TakeNewTranscript(), Heartbeat: t.ID,
	})
}

// busyForHeartbeat is true while a turn runs or messages wait for one:
// a heartbeat then has nothing to add.
func (s *session) busyForHeartbeat() bool {
	st := s.st
	return st.Turn.Running() || st.Queue.Queued() || st.Intake.Holding() || st.Engagement.GatePending() ||
		s.signals.inbound.Len() > 0 || st.Replies.Compacting()
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
		st.Turn.Models.ModelOverride = ev.Model
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
