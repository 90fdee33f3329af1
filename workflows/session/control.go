package session

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// heartbeatTicksKept is how many tick IDs are remembered, so a tick
// signalled twice (the tick workflow's activity retried) runs once.
// Ticks come minutes apart, so a few cover any retry.
const heartbeatTicksKept = 16

// Heartbeat outcomes, as /status and the state query show them.
const (
	HeartbeatSkippedBusy  = "skipped: a turn was running or messages were waiting"
	HeartbeatSkippedEmpty = "skipped: the checklist is empty or missing"
	HeartbeatAcked        = "nothing to report (HEARTBEAT_OK)"
	HeartbeatDelivered    = "reported in the chat"
	HeartbeatMuted        = "report kept back (/send off)"
	HeartbeatFailed       = "failed"
)

// ControlState is the control part: the chat's settings (/think,
// /verbose, /usage, /send), the usage totals, when a person last did
// something here, and the heartbeat ticks seen. Turns read its settings
// through TurnOptions.
type ControlState struct {
	Think     pipeline.ThinkLevel `json:"think,omitempty"`
	Verbose   bool                `json:"verbose,omitempty"`
	UsageMode pipeline.UsageMode  `json:"usage,omitempty"`
	// Muted is /send off: turns run, their replies are not sent.
	Muted bool `json:"muted,omitempty"`
	// ThinkNoteDue: the next turn says so if its model takes no
	// reasoning effort (once after /think changed).
	ThinkNoteDue bool           `json:"think_note_due,omitempty"`
	UsageTotal   pipeline.Usage `json:"usage_total,omitzero"`
	// IdleFrom is when the session last went idle after something a
	// person did (PersonActed): the idle TTL counts from it, so heartbeat
	// turns keep no session alive.
	IdleFrom    time.Time `json:"idle_from,omitzero"`
	PersonActed bool      `json:"person_acted,omitempty"`
	// LastHeartbeat is the latest tick and what became of it.
	LastHeartbeat *HeartbeatRecord `json:"last_heartbeat,omitempty"`
	// HeartbeatTicks are the latest tick IDs, oldest first (at most
	// heartbeatTicksKept).
	HeartbeatTicks []string `json:"heartbeat_ticks,omitempty"`
	// Ticks are the ticks whose checklist is being read (at most
	// heartbeatTicksKept), and RunningTick the tick whose turn runs.
	Ticks       []pipeline.HeartbeatTick `json:"ticks,omitempty"`
	RunningTick string                   `json:"running_tick,omitempty"`
}

// HeartbeatRecord is one heartbeat tick as operators see it.
type HeartbeatRecord struct {
	TickID      string    `json:"tick_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	At          time.Time `json:"at"`
	Outcome     string    `json:"outcome"`
	TurnID      string    `json:"turn_id,omitempty"`
}

// TurnOptions are the chat settings one turn runs with: the session's,
// with the directives of its messages over them.
type TurnOptions struct {
	Think   pipeline.ThinkLevel `json:"think,omitempty"`
	Verbose bool                `json:"verbose,omitempty"`
	Usage   pipeline.UsageMode  `json:"usage,omitempty"`
	// Model is a /model directive for this turn: strict, like the
	// session's /model.
	Model string `json:"model,omitempty"`
	Muted bool   `json:"muted,omitempty"`
	// ThinkNote: say in the footer when the model takes no reasoning
	// effort.
	ThinkNote bool `json:"think_note,omitempty"`
}

// TurnOptions are the options of a turn whose batch carries d (nil for
// none). The think note goes to one turn only.
func (s *ControlState) TurnOptions(d *pipeline.Directives) TurnOptions {
	o := TurnOptions{Think: s.Think, Verbose: s.Verbose, Usage: s.UsageMode, Muted: s.Muted, ThinkNote: s.ThinkNoteDue}
	s.ThinkNoteDue = false
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

// Apply sets directives for the session (a message of directives only);
// the model and queue directives are other parts'.
func (s *ControlState) Apply(d pipeline.Directives) {
	if d.Think != nil {
		s.Think, s.ThinkNoteDue = *d.Think, *d.Think != pipeline.ThinkOff
	}
	if d.Verbose != nil {
		s.Verbose = *d.Verbose
	}
	if d.Usage != nil {
		s.UsageMode = *d.Usage
	}
}

// Saved is into with the control part's settings, as the session entry
// keeps them.
func (s *ControlState) Saved(into pipeline.SessionSettings) pipeline.SessionSettings {
	into.Think, into.Verbose, into.Usage, into.Muted = s.Think, s.Verbose, s.UsageMode, s.Muted
	return into
}

// Restore takes what the session entry saved (a session that starts
// again).
func (s *ControlState) Restore(saved pipeline.SessionSettings) {
	s.Think, s.Verbose, s.UsageMode, s.Muted = saved.Think, saved.Verbose, saved.Usage, saved.Muted
}

// AddUsage counts one model step's usage in the session's totals.
func (s *ControlState) AddUsage(u *pipeline.Usage) []Effect {
	if u != nil {
		s.UsageTotal = s.UsageTotal.Add(*u)
	}
	return nil
}

// Touched records that a person did something.
func (s *ControlState) Touched() { s.PersonActed = true }

// IdleLeft is how long the idle session may stay so from env.Now: the
// TTL counts from when it went idle after what a person did last, not
// after a heartbeat turn. A session no person started (a heartbeat tick)
// has none left once its tick is answered.
func (s *ControlState) IdleLeft(env Env) time.Duration {
	if s.PersonActed {
		s.IdleFrom, s.PersonActed = env.Now, false
	}
	if s.IdleFrom.IsZero() {
		return 0
	}
	return s.IdleFrom.Add(env.Settings.IdleTTL.D()).Sub(env.Now)
}

// NewTick records a heartbeat tick; false for one already seen, which
// is not run again.
func (s *ControlState) NewTick(env Env, t pipeline.HeartbeatTick) ([]Effect, bool) {
	for _, id := range s.HeartbeatTicks {
		if id == t.ID {
			env.logger().Debug("Duplicate heartbeat tick ignored", "tick", t.ID)
			return nil, false
		}
	}
	s.HeartbeatTicks = append(s.HeartbeatTicks, t.ID)
	if over := len(s.HeartbeatTicks) - heartbeatTicksKept; over > 0 {
		s.HeartbeatTicks = append([]string(nil), s.HeartbeatTicks[over:]...)
	}
	s.LastHeartbeat = &HeartbeatRecord{TickID: t.ID, ScheduledAt: t.ScheduledAt, At: env.Now, Outcome: "running"}
	return []Effect{Publish{}}, true
}

// HeartbeatDone records what became of a tick; a tick older than the
// latest changes nothing.
func (s *ControlState) HeartbeatDone(env Env, tickID, outcome, turnID string) []Effect {
	env.logger().Info("Heartbeat tick done", "tick", tickID, "outcome", outcome)
	h := s.LastHeartbeat
	if h == nil || h.TickID != tickID {
		return nil
	}
	h.Outcome, h.TurnID = outcome, turnID
	return []Effect{Publish{}}
}

// HeartbeatLine is the heartbeat line of /status: "" before the first
// tick.
func (s *ControlState) HeartbeatLine() string {
	if h := s.LastHeartbeat; h != nil {
		return pipeline.HeartbeatStatus(h.At, h.Outcome)
	}
	return ""
}
