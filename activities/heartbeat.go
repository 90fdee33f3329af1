package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

// SessionSignaler delivers a heartbeat tick to a session's workflow,
// starting it when it is closed. gateway.Ingress is the real one: it
// starts sessions with the same options for every inbound message, and
// this package may not import the session workflow's names.
type SessionSignaler interface {
	Heartbeat(ctx context.Context, session pipeline.SessionKey, tick pipeline.HeartbeatTick) error
}

// Heartbeats are the activities of heartbeat turns: the Temporal Schedule
// of each session's heartbeat (one per session, ID
// pipeline.HeartbeatScheduleID), the tick's signal to the session, and
// the checklist. They are a struct of their own because they alone talk
// to Temporal itself, with a client that exists only once a worker has
// dialled; every other activity stays testable without a server. The
// operator CLI calls the same methods outside any activity.
type Heartbeats struct {
	Schedules client.ScheduleClient
	// TaskQueue is where the ticks run: the sessions' task queue.
	TaskQueue string
	Sessions  SessionSignaler
	// ChecklistFile is REPLYFLOW_HEARTBEAT_FILE; empty means no checklist.
	ChecklistFile string
	Logger        *slog.Logger

	warnedMissing, warnedLong atomic.Bool
}

// Schedule policies. A tick still running when the next is due means the
// session is unreachable: the next one is skipped, not queued. After an
// outage only a tick that is at most a minute late still runs; a burst
// of stale heartbeats helps nobody. A failed tick must not pause the
// heartbeat: the next one may well get through.
const (
	heartbeatOverlap       = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	heartbeatCatchupWindow = time.Minute
	// heartbeatTickTimeout ends a tick that no worker ran (and its
	// retries): with overlap skipped, a stuck tick would hold the next.
	heartbeatTickTimeout = 5 * time.Minute
)

// MaxChecklistBytes caps the checklist read into a heartbeat turn's
// prompt (and into workflow history, as the activity's result).
const MaxChecklistBytes = 16 << 10

func (h *Heartbeats) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}

// SignalHeartbeat is the tick workflow's one activity: the session gets
// the tick, and is started when it is closed.
func (h *Heartbeats) SignalHeartbeat(ctx context.Context, sig pipeline.HeartbeatSignal) error {
	if err := sig.Session.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("heartbeat tick %s names no session: %v", sig.Tick.ID, err), pipeline.ErrHeartbeatRequest, err)
	}
	if err := h.Sessions.Heartbeat(ctx, sig.Session, sig.Tick); err != nil {
		return fmt.Errorf("signal heartbeat tick %s to %s: %w", sig.Tick.ID, sig.Session.WorkflowID(), err)
	}
	return nil
}

// UpsertHeartbeat creates the session's heartbeat schedule, or changes
// the spec of the one it has. A heartbeat an operator paused stays
// paused, with the operator's note: the chat learns it from the
// returned info.
func (h *Heartbeats) UpsertHeartbeat(ctx context.Context, req pipeline.HeartbeatRequest) (pipeline.HeartbeatInfo, error) {
	id := pipeline.HeartbeatScheduleID(req.Session)
	if err := req.Session.Validate(); err != nil {
		return pipeline.HeartbeatInfo{}, temporal.NewNonRetryableApplicationError("heartbeat for no valid session: "+err.Error(), pipeline.ErrHeartbeatRequest, err)
	}
	spec, err := ScheduleSpecOf(req.Spec)
	if err == nil {
		err = checkTimeZoneExists(req.Spec.TimeZone)
	}
	if err != nil {
		return pipeline.HeartbeatInfo{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrHeartbeatRequest, err)
	}
	note := "set by " + cmp.Or(req.By, "replyflow")
	action := h.tickAction(req.Session)
	policy := &client.SchedulePolicies{Overlap: heartbeatOverlap, CatchupWindow: heartbeatCatchupWindow}
	handle, err := h.Schedules.Create(ctx, client.ScheduleOptions{
		ID: id, Spec: spec, Action: action, Note: note,
		Overlap: policy.Overlap, CatchupWindow: policy.CatchupWindow,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		handle = h.Schedules.GetHandle(ctx, id)
		err = handle.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec, s.Action, s.Policy = &spec, action, policy
			if s.State == nil {
				s.State = &client.ScheduleState{}
			}
			if !s.State.Paused {
				s.State.Note = note
			}
			return &client.ScheduleUpdate{Schedule: &s}, nil
		}})
	}
	if err != nil {
		return pipeline.HeartbeatInfo{}, fmt.Errorf("set heartbeat schedule %s (%s): %w", id, req.Spec, err)
	}
	h.logger().Info("Heartbeat set", "schedule", id, "spec", req.Spec.String(), "by", req.By)
	return h.DescribeHeartbeat(ctx, req.Session)
}

// tickAction starts the tick workflow on the sessions' task queue, with
// an ID the server completes with the scheduled time.
func (h *Heartbeats) tickAction(key pipeline.SessionKey) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:                       pipeline.HeartbeatTickID(key),
		Workflow:                 pipeline.WorkflowHeartbeatTick,
		Args:                     []any{pipeline.HeartbeatTickParams{Session: key}},
		TaskQueue:                h.TaskQueue,
		WorkflowExecutionTimeout: heartbeatTickTimeout,
		StaticSummary:            fmt.Sprintf("heartbeat tick for %s chat %s", key.Channel, key.Chat),
	}
}

// BackOffHeartbeat lets the session's heartbeat tick no earlier than
// until: its Schedule starts then (the spec's StartAt), so the ticks of a
// heartbeat that keeps answering the same cost no workflow at all while
// it backs off. Setting the heartbeat again (/heartbeat every ...) starts
// it at once; none is no error.
func (h *Heartbeats) BackOffHeartbeat(ctx context.Context, key pipeline.SessionKey, until time.Time, why string) error {
	id := pipeline.HeartbeatScheduleID(key)
	err := h.Schedules.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		if s.Spec == nil || !s.Spec.StartAt.Before(until) {
			return nil, temporal.ErrSkipScheduleUpdate // nothing to change
		}
		s.Spec.StartAt = until
		if s.State == nil {
			s.State = &client.ScheduleState{}
		}
		if !s.State.Paused {
			s.State.Note = "backs off until " + until.UTC().Format(time.RFC3339) + ": " + why
		}
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("back off heartbeat schedule %s until %s: %w", id, until.UTC().Format(time.RFC3339), err)
	}
	h.logger().Info("Heartbeat backs off", "schedule", id, "until", until)
	return nil
}

// DeleteHeartbeat removes the session's heartbeat; none is no error.
func (h *Heartbeats) DeleteHeartbeat(ctx context.Context, key pipeline.SessionKey) error {
	id := pipeline.HeartbeatScheduleID(key)
	if err := h.Schedules.GetHandle(ctx, id).Delete(ctx); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete heartbeat schedule %s: %w", id, err)
	}
	h.logger().Info("Heartbeat deleted", "schedule", id)
	return nil
}

// TriggerHeartbeat runs the session's heartbeat now (also while it is
// paused), unless a tick is running: overlaps are skipped.
func (h *Heartbeats) TriggerHeartbeat(ctx context.Context, key pipeline.SessionKey) error {
	id := pipeline.HeartbeatScheduleID(key)
	err := h.Schedules.GetHandle(ctx, id).Trigger(ctx, client.ScheduleTriggerOptions{})
	if isNotFound(err) {
		return noHeartbeat(key)
	}
	if err != nil {
		return fmt.Errorf("trigger heartbeat schedule %s: %w", id, err)
	}
	return nil
}

// PauseHeartbeat stops the session's ticks until ResumeHeartbeat; note
// says who and why, on the schedule for everyone to see.
func (h *Heartbeats) PauseHeartbeat(ctx context.Context, key pipeline.SessionKey, note string) error {
	err := h.Schedules.GetHandle(ctx, pipeline.HeartbeatScheduleID(key)).Pause(ctx, client.SchedulePauseOptions{Note: note})
	return h.stateChange(key, "pause", err)
}

// ResumeHeartbeat lets a paused heartbeat tick again.
func (h *Heartbeats) ResumeHeartbeat(ctx context.Context, key pipeline.SessionKey, note string) error {
	err := h.Schedules.GetHandle(ctx, pipeline.HeartbeatScheduleID(key)).Unpause(ctx, client.ScheduleUnpauseOptions{Note: note})
	return h.stateChange(key, "resume", err)
}

func (h *Heartbeats) stateChange(key pipeline.SessionKey, verb string, err error) error {
	id := pipeline.HeartbeatScheduleID(key)
	switch {
	case isNotFound(err):
		return noHeartbeat(key)
	case err != nil:
		return fmt.Errorf("%s heartbeat schedule %s: %w", verb, id, err)
	}
	h.logger().Info("Heartbeat "+verb+"d", "schedule", id)
	return nil
}

// DescribeHeartbeat says where the session's heartbeat stands; On is
// false when it has none.
func (h *Heartbeats) DescribeHeartbeat(ctx context.Context, key pipeline.SessionKey) (pipeline.HeartbeatInfo, error) {
	id := pipeline.HeartbeatScheduleID(key)
	d, err := h.Schedules.GetHandle(ctx, id).Describe(ctx)
	if isNotFound(err) {
		return pipeline.HeartbeatInfo{ScheduleID: id}, nil
	}
	if err != nil {
		return pipeline.HeartbeatInfo{}, fmt.Errorf("describe heartbeat schedule %s: %w", id, err)
	}
	info := pipeline.HeartbeatInfo{ScheduleID: id, On: true, Spec: specText(d.Schedule.Spec)}
	if st := d.Schedule.State; st != nil {
		info.Paused, info.Note = st.Paused, st.Note
	}
	info.NextRun, info.LastRun = runTimes(d.Info.NextActionTimes, d.Info.RecentActions)
	return info, nil
}

// ListHeartbeats describes every heartbeat schedule of the namespace,
// from visibility (eventually consistent: a change shows within seconds).
func (h *Heartbeats) ListHeartbeats(ctx context.Context) ([]pipeline.HeartbeatInfo, error) {
	it, err := h.Schedules.List(ctx, client.ScheduleListOptions{PageSize: 1000})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	var out []pipeline.HeartbeatInfo
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return out, fmt.Errorf("list schedules: %w", err)
		}
		if _, ok := pipeline.HeartbeatSessionID(e.ID); !ok {
			continue
		}
		info := pipeline.HeartbeatInfo{ScheduleID: e.ID, On: true, Paused: e.Paused, Note: e.Note, Spec: specText(e.Spec)}
		info.NextRun, info.LastRun = runTimes(e.NextActionTimes, e.RecentActions)
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b pipeline.HeartbeatInfo) int { return strings.Compare(a.ScheduleID, b.ScheduleID) })
	return out, nil
}

func specText(s *client.ScheduleSpec) string {
	spec, err := HeartbeatSpecOf(s)
	if err != nil {
		return "(changed outside replyflow)"
	}
	return spec.String()
}

func runTimes(next []time.Time, recent []client.ScheduleActionResult) (nextRun, lastRun time.Time) {
	if len(next) > 0 {
		nextRun = next[0]
	}
	if len(recent) > 0 {
		lastRun = recent[len(recent)-1].ScheduleTime
	}
	return nextRun, lastRun
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

func noHeartbeat(key pipeline.SessionKey) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("%s has no heartbeat; set one with /heartbeat every 30m (or replyflow heartbeat set)", key.WorkflowID()),
		pipeline.ErrNoHeartbeat, nil)
}
