package session

import (
	"slices"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// takeTick takes the tick whose checklist read answered.
func (s *ControlState) takeTick(id string) (pipeline.HeartbeatTick, bool) {
	i := slices.IndexFunc(s.Ticks, func(t pipeline.HeartbeatTick) bool { return t.ID == id })
	if i < 0 {
		return pipeline.HeartbeatTick{}, false
	}
	t := s.Ticks[i]
	s.Ticks = slices.Delete(s.Ticks, i, i+1)
	return t, true
}

// runningTick is the tick whose heartbeat turn runs, taken once.
func (s *ControlState) runningTick() string {
	id := s.RunningTick
	s.RunningTick = ""
	return id
}

// ReadingChecklists is true while a tick's checklist is being read: the
// run waits for it before it ends.
func (s *ControlState) ReadingChecklists() bool { return len(s.Ticks) > 0 }

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
