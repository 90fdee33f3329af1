package session

import (
	"slices"

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
