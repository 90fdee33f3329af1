package retiring

import (
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// takeHeartbeat handles a heartbeat tick: once per tick ID, and only in
// a quiet session. The checklist is read first (it may have changed
// since the last tick); an empty one, or a session that became busy
// meanwhile, skips the tick. Otherwise a heartbeat turn runs.
func (s *session) takeHeartbeat(t pipeline.HeartbeatTick) {
	if !s.control.newTick(t, workflow.Now(s.ctx)) {
		return
	}
	if s.busyForHeartbeat() {
		s.control.heartbeatDone(t.ID, HeartbeatSkippedBusy, "")
		return
	}
	s.heartbeatReads++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.heartbeatReads-- }()
		checklist, err := s.control.readChecklist(ctx)
		switch {
		case err != nil:
			s.log.Error("Heartbeat checklist not read; the tick is skipped", "tick", t.ID, "error", err)
			s.control.heartbeatDone(t.ID, HeartbeatFailed+": the checklist could not be read ("+errorType(err)+")", "")
		case checklist == "":
			s.control.heartbeatDone(t.ID, HeartbeatSkippedEmpty, "")
		case s.busyForHeartbeat():
			s.control.heartbeatDone(t.ID, HeartbeatSkippedBusy, "")
		default:
			s.turns.startHeartbeat(t, checklist)
		}
	})
}

// busyForHeartbeat is true while a turn runs or messages wait for one:
// a heartbeat then has nothing to add.
func (s *session) busyForHeartbeat() bool {
	return s.turns.running() || s.turns.queued() || s.intake.buffering() || s.engagement.gatePending() ||
		s.inbound.Len() > 0 || s.compacting
}
