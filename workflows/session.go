package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// session is one run of the session workflow: the durable State plus the
// run's settings and handles.
type session struct {
	ctx      workflow.Context
	key      pipeline.SessionKey
	st       *State
	settings pipeline.Settings
	log      log.Logger
	inbound  workflow.ReceiveChannel
	// attrsDirty is set when a search attribute changed and is flushed at
	// the next status change, so one transition costs one history event.
	attrsDirty bool
	published  struct {
		status Status
		depth  int
		last   time.Time
	}
}

// SessionWorkflow serves one conversation until it has been idle for the
// configured TTL, continuing as new when its history grows large.
func SessionWorkflow(ctx workflow.Context, p SessionParams) error {
	if err := p.Session.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError("invalid session key: "+err.Error(), "InvalidSession", err)
	}
	s := &session{
		ctx:     ctx,
		key:     p.Session,
		st:      p.State,
		log:     log.With(workflow.GetLogger(ctx), "session", p.Session.WorkflowID()),
		inbound: workflow.GetSignalChannel(ctx, SignalInbound),
	}
	if s.st == nil {
		s.st = &State{Status: StatusIdle}
	}
	if err := s.loadSettings(); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, s.snapshot); err != nil {
		return err
	}
	workflow.Go(ctx, s.receiveInbound)
	workflow.Go(ctx, s.applyReactions)
	s.rearmClears()
	return s.run()
}

func (s *session) loadSettings() error {
	ctx := workflow.WithLocalActivityOptions(s.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		Summary:             "load settings",
	})
	err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivityLoadSettings, s.key).Get(ctx, &s.settings)
	if err != nil {
		return fmt.Errorf("load settings for %s: %w", s.key.WorkflowID(), err)
	}
	return nil
}

// run is the main loop: it runs one turn at a time for queued messages and
// decides when the session may continue as new or complete.
func (s *session) run() error {
	// Take the signal that started this run before anything else, so a
	// first message does not start (and cancel) an idle timer.
	s.drainInbound()
	for {
		if len(s.st.Queue) > 0 {
			s.runTurn()
			continue
		}
		if s.shouldContinueAsNew() && s.st.quiet() {
			s.drainInbound()
			if s.st.quiet() {
				return s.continueAsNew()
			}
			continue
		}
		if !s.st.quiet() {
			// Reactions are still being applied or wait to be cleared.
			if err := workflow.Await(s.ctx, func() bool { return len(s.st.Queue) > 0 || s.st.quiet() }); err != nil {
				return err
			}
			continue
		}
		expired, err := s.waitWhileIdle()
		if err != nil {
			return err
		}
		if expired {
			s.drainInbound()
			if s.st.quiet() {
				s.log.Info("Session idle past its TTL; completing", "idle_ttl", s.settings.IdleTTL)
				return nil
			}
		}
	}
}

// waitWhileIdle waits for work, or for the idle TTL to pass. The timer is
// cancelled as soon as work arrives, so no stale timer lingers in history.
func (s *session) waitWhileIdle() (expired bool, err error) {
	timerCtx, cancel := workflow.WithCancel(s.ctx)
	defer cancel()
	timer := workflow.NewTimerWithOptions(timerCtx, s.settings.IdleTTL.D(), workflow.TimerOptions{
		Summary: "idle; the session completes after " + s.settings.IdleTTL.String(),
	})
	err = workflow.Await(s.ctx, func() bool {
		return timer.IsReady() || !s.st.quiet() || s.shouldContinueAsNew()
	})
	return err == nil && timer.IsReady(), err
}

func (s *session) receiveInbound(ctx workflow.Context) {
	for {
		var in pipeline.Inbound
		s.inbound.Receive(ctx, &in)
		s.accept(in)
	}
}

// drainInbound takes every signal already delivered to this run, so none is
// lost when the run completes or continues as new.
func (s *session) drainInbound() {
	for {
		var in pipeline.Inbound
		if !s.inbound.ReceiveAsync(&in) {
			return
		}
		s.accept(in)
	}
}

func (s *session) accept(in pipeline.Inbound) {
	if s.st.seen(in.MessageID) {
		s.log.Debug("Duplicate inbound ignored", "message_id", in.MessageID)
		return
	}
	s.st.remember(in.MessageID)
	s.st.LastInboundAt = workflow.Now(s.ctx)
	s.st.Queue = append(s.st.Queue, in)
	s.attrsDirty = true
	s.react([]pipeline.Inbound{in}, pipeline.ReactionReceived)
}

func (s *session) shouldContinueAsNew() bool {
	info := workflow.GetInfo(s.ctx)
	return info.GetContinueAsNewSuggested() ||
		(s.settings.MaxHistoryEvents > 0 && info.GetCurrentHistoryLength() >= s.settings.MaxHistoryEvents)
}

func (s *session) continueAsNew() error {
	// Reactions carry their clear times; the next run re-arms the timers.
	if err := workflow.Await(s.ctx, func() bool { return workflow.AllHandlersFinished(s.ctx) }); err != nil {
		return err
	}
	s.log.Info("Continuing as new", "history_length", workflow.GetInfo(s.ctx).GetCurrentHistoryLength())
	return workflow.NewContinueAsNewError(s.ctx, WorkflowName, SessionParams{Session: s.key, State: s.st})
}

// setStatus records a transition and publishes it, with any other changed
// search attribute, in one upsert.
func (s *session) setStatus(st Status) {
	if s.st.Status != st {
		s.st.Status = st
		s.attrsDirty = true
	}
	s.publish()
}

func (s *session) publish() {
	if !s.attrsDirty && s.published.status != "" {
		return
	}
	var updates []temporal.SearchAttributeUpdate
	if s.published.status != s.st.Status {
		updates = append(updates, AttrState.ValueSet(string(s.st.Status)))
	}
	if depth := len(s.st.Queue); s.published.status == "" || depth != s.published.depth {
		updates = append(updates, AttrQueueDepth.ValueSet(int64(depth)))
	}
	if !s.st.LastInboundAt.IsZero() && !s.st.LastInboundAt.Equal(s.published.last) {
		updates = append(updates, AttrLastInboundAt.ValueSet(s.st.LastInboundAt))
	}
	if s.published.status == "" {
		updates = append(updates, AttrChannel.ValueSet(s.key.Channel), AttrChat.ValueSet(s.key.Chat))
	}
	s.published.status, s.published.depth, s.published.last = s.st.Status, len(s.st.Queue), s.st.LastInboundAt
	s.attrsDirty = false
	if len(updates) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(s.ctx, updates...); err != nil {
			s.log.Warn("Search attributes not updated; is the namespace missing replyflow's attributes? See README", "error", err)
		}
	}
	workflow.SetCurrentDetails(s.ctx, s.details())
}

func (s *session) details() string {
	d := fmt.Sprintf("**%s** · state `%s` · queue %d · reactions pending %d · turns %d",
		s.key.WorkflowID(), s.st.Status, len(s.st.Queue), len(s.st.Reactions), s.st.TurnSeq)
	if t := s.st.LastTurn; t != nil {
		d += fmt.Sprintf("\n\nlast turn `%s`: %s", t.TurnID, t.Outcome)
		if t.Error != "" {
			d += " — " + t.Error
		}
	}
	return d
}

func (s *session) snapshot() (Snapshot, error) {
	queue := make([]QueuedMessage, 0, len(s.st.Queue))
	for _, in := range s.st.Queue {
		queue = append(queue, QueuedMessage{MessageID: in.MessageID, SenderID: in.SenderID, ThreadID: in.ThreadID, TextBytes: len(in.Text), ReceivedAt: in.ReceivedAt})
	}
	return Snapshot{
		Session: s.key, Status: s.st.Status, Settings: s.settings, Queue: queue,
		Reactions: s.st.Reactions, ReactionChanges: s.st.ReactionChanges,
		TurnSeq: s.st.TurnSeq, LastTurn: s.st.LastTurn, Deliveries: s.st.Deliveries,
		SeenMessages: len(s.st.Seen), LastInboundAt: s.st.LastInboundAt,
		HistoryLength: workflow.GetInfo(s.ctx).GetCurrentHistoryLength(),
	}, nil
}

// errorType is the ApplicationError type of err, or "" for other failures.
func errorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "Timeout"
	}
	return ""
}
