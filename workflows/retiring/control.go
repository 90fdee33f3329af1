package retiring

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// Bounds of the control part.
const (
	// heartbeatTicksKept is how many tick IDs are remembered, so a tick
	// signalled twice (the tick workflow's activity retried) runs once.
	// Ticks come minutes apart, so a few cover any retry.
	heartbeatTicksKept = 16
	// heartbeatActivityTimeout bounds the checklist read and the
	// schedule calls of /heartbeat, retries included.
	heartbeatActivityTimeout = time.Minute
)

// control is the part of the chat settings that changeControl brings and
// of heartbeat turns: it owns ControlState (/think, /verbose, /usage, /send,
// the usage totals, when a person last did something here, the last
// heartbeat and the ticks seen). It touches no other state; the turns
// read its settings through turnOptions.
type control struct {
	*runEnv
	st *ControlState
}

// turnOptions are the options of a turn for a batch's directives.
func (s *control) turnOptions(d *pipeline.Directives) TurnOptions {
	o := TurnOptions{Think: s.st.Think, Verbose: s.st.Verbose, Usage: s.st.UsageMode, Muted: s.st.Muted, ThinkNote: s.st.ThinkNoteDue}
	s.st.ThinkNoteDue = false
	if d == nil {
		return o
	}
	if d.Think != nil {
		o.Think, o.ThinkNote = *d.Think, true
	}
	if d.Verbose != nil {
		o.Verbose = *d.Verbose
	}
	if d.Usage != nil {
		o.Usage = *d.Usage
	}
	if d.Model != nil {
		o.Model = *d.Model
	}
	return o
}

// apply sets directives for the session (a message of directives only).
func (s *control) apply(d pipeline.Directives) {
	if d.Think != nil {
		s.st.Think, s.st.ThinkNoteDue = *d.Think, *d.Think != pipeline.ThinkOff
	}
	if d.Verbose != nil {
		s.st.Verbose = *d.Verbose
	}
	if d.Usage != nil {
		s.st.UsageMode = *d.Usage
	}
}

// saved is what the control part keeps in the session entry.
func (s *control) saved(into pipeline.SessionSettings) pipeline.SessionSettings {
	into.Think, into.Verbose, into.Usage, into.Muted = s.st.Think, s.st.Verbose, s.st.UsageMode, s.st.Muted
	return into
}

// restore takes what the session entry saved (a session that starts
// again).
func (s *control) restore(saved pipeline.SessionSettings) {
	s.st.Think, s.st.Verbose, s.st.UsageMode, s.st.Muted = saved.Think, saved.Verbose, saved.Usage, saved.Muted
}

// addUsage counts one model step's usage in the session's totals.
func (s *control) addUsage(u *pipeline.Usage) {
	if u != nil {
		s.st.UsageTotal = s.st.UsageTotal.Add(*u)
	}
}

// touched records that a person did something.
func (s *control) touched() { s.st.PersonActed = true }

// idleLeft is how long the idle session may stay so from now: the TTL
// counts from when it went idle after what a person did last, not after
// a heartbeat turn.
func (s *control) idleLeft(now time.Time) time.Duration {
	if s.st.PersonActed {
		s.st.IdleFrom, s.st.PersonActed = now, false
	}
	if s.st.IdleFrom.IsZero() {
		return 0 // started by a heartbeat tick: done once it is answered
	}
	return s.st.IdleFrom.Add(s.settings.IdleTTL.D()).Sub(now)
}

// newTick records a tick and reports false for one already seen.
func (s *control) newTick(t pipeline.HeartbeatTick, now time.Time) bool {
	for _, id := range s.st.HeartbeatTicks {
		if id == t.ID {
			s.log.Debug("Duplicate heartbeat tick ignored", "tick", t.ID)
			return false
		}
	}
	s.st.HeartbeatTicks = append(s.st.HeartbeatTicks, t.ID)
	if over := len(s.st.HeartbeatTicks) - heartbeatTicksKept; over > 0 {
		s.st.HeartbeatTicks = append([]string(nil), s.st.HeartbeatTicks[over:]...)
	}
	s.st.LastHeartbeat = &HeartbeatRecord{TickID: t.ID, ScheduledAt: t.ScheduledAt, At: now, Outcome: "running"}
	s.attrsDirty = true
	return true
}

// heartbeatDone records what became of the latest tick.
func (s *control) heartbeatDone(tickID, outcome, turnID string) {
	if h := s.st.LastHeartbeat; h != nil && h.TickID == tickID {
		h.Outcome, h.TurnID = outcome, turnID
		s.attrsDirty = true
	}
	s.log.Info("Heartbeat tick done", "tick", tickID, "outcome", outcome)
	reason, _, _ := strings.Cut(outcome, ":")
	s.count(MetricHeartbeats, map[string]string{"outcome": reason})
}

// heartbeatLine is the heartbeat line of /status: "" before the first
// tick.
func (s *control) heartbeatLine() string {
	if h := s.st.LastHeartbeat; h != nil {
		return pipeline.HeartbeatStatus(h.At, h.Outcome)
	}
	return ""
}

// readChecklist reads the heartbeat checklist through an activity (the
// file may change between ticks); "" skips the tick.
func (s *control) readChecklist(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, heartbeatActivityOptions("read the heartbeat checklist"))
	var text string
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityReadHeartbeatChecklist, s.key).Get(ctx, &text)
	return text, err
}

// heartbeatActivityOptions retry a schedule or checklist call for up to
// heartbeatActivityTimeout; an ApplicationError the activity marks
// non-retryable (a bad spec, no heartbeat) is answered at once.
func heartbeatActivityOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    15 * time.Second,
		ScheduleToCloseTimeout: heartbeatActivityTimeout,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
		Summary:                summary,
	}
}
