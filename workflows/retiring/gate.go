package retiring

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const defaultGateTimeout = 2500 * time.Millisecond

// gateMessage holds a message of a gated chat that no trigger addressed,
// until its debounced batch goes to the gate model. With no gate model, or
// while a turn runs (no gate is evaluated then), it is only observed.
func (s *engagement) gateMessage(in pipeline.Inbound, now time.Time) {
	if s.settings.GateModel == "" || s.turnRunning() {
		s.observe(in, now)
		return
	}
	if len(s.st.GateBuffer) == 0 {
		s.st.GateSeq++
		if s.v.hardened {
			s.st.GateFirstAt = now
		}
		s.armGateFlush(s.st.GateSeq)
	}
	s.st.GateBuffer = append(s.st.GateBuffer, in)
	s.st.GateFlushAt = s.flushAt(s.st.GateFirstAt, now, s.settings.Queue.Debounce.D())
	s.attrsDirty = true
	if s.v.hardened && overBudget(s.st.GateBuffer) {
		s.askGateNow()
	}
}

// askGateNow sends the gated batch to the gate at once (it reached its
// size bound): the armed timer is cancelled and a new batch starts with
// the next message.
func (s *engagement) askGateNow() {
	s.st.GateSeq++
	if s.cancelGateTimer != nil {
		s.cancelGateTimer()
		s.cancelGateTimer = nil
	}
	batch := s.takeGateBuffer()
	if s.v.promises {
		// The batch is out of State from here on: the session counts as
		// busy until the gate is asked, so no continue-as-new decided in
		// this task leaves it behind. runGate counts itself again
		// without yielding in between.
		s.gating++
		workflow.Go(s.ctx, func(ctx workflow.Context) {
			s.gating--
			s.runGate(ctx, batch)
		})
		return
	}
	workflow.Go(s.ctx, func(ctx workflow.Context) { s.runGate(ctx, batch) })
}

func (s *engagement) takeGateBuffer() []pipeline.Inbound {
	batch := s.st.GateBuffer
	s.st.GateBuffer, s.st.GateFirstAt = nil, time.Time{}
	return batch
}

// busy is true while the gate model is being asked.
func (s *engagement) busy() bool { return s.gating > 0 }

// gatePending is true while a gated batch waits for the gate model.
func (s *engagement) gatePending() bool { return len(s.st.GateBuffer) > 0 }

// dropGateBuffer keeps a pending gated batch as observed context: a
// mention or a reply to the bot bypasses the gate and discards it.
func (s *engagement) dropGateBuffer(now time.Time) {
	for _, in := range s.st.GateBuffer {
		s.observe(in, now)
	}
	s.st.GateBuffer = nil
}

// resume re-arms the gate's window a previous run left open.
func (s *engagement) resume() {
	if len(s.st.GateBuffer) > 0 {
		if s.v.hardened && s.st.GateFirstAt.IsZero() {
			// Carried from a run without the maximum wait.
			s.st.GateFirstAt = workflow.Now(s.ctx)
		}
		s.armGateFlush(s.st.GateSeq)
	}
}

// armGateFlush asks the gate once the batch's window has passed.
func (s *engagement) armGateFlush(gen int) {
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		if s.v.hardened {
			// askGateNow cancels this wait when the batch fills up.
			timerCtx, cancel := workflow.WithCancel(ctx)
			s.cancelGateTimer = cancel
			ctx = timerCtx
		}
		for {
			if s.st.GateSeq != gen || len(s.st.GateBuffer) == 0 {
				return
			}
			wait := s.st.GateFlushAt.Sub(workflow.Now(ctx))
			if wait <= 0 {
				break
			}
			timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: fmt.Sprintf("debounce %s before the gate", wait)})
			if timer.Get(ctx, nil) != nil {
				return
			}
		}
		s.cancelGateTimer = nil
		s.runGate(ctx, s.takeGateBuffer())
	})
}

// runGate asks the gate model about the batch: forward starts one turn
// that sees the latest messages and anchors no reply; anything else (no,
// an error, a timeout, output that is not the strict JSON) skips, and the
// batch is observed.
func (s *engagement) runGate(ctx workflow.Context, batch []pipeline.Inbound) {
	now := workflow.Now(ctx)
	if s.turnRunning() {
		for _, in := range batch {
			s.observe(in, now)
		}
		return
	}
	req := pipeline.GateRequest{Session: s.key, Batch: turnMessages(batch)}
	keep := max(pipeline.GateContext-len(batch), 0)
	observed := s.st.Observed[max(len(s.st.Observed)-keep, 0):]
	for _, o := range observed {
		req.Context = append(req.Context, pipeline.TurnMessage{SenderName: o.Sender, Text: o.Text, At: o.At})
	}
	for _, in := range batch {
		req.IndirectMention = req.IndirectMention || pipeline.MatchesAlias(in.Text, s.settings.Aliases)
	}
	timeout := s.settings.GateTimeout.D()
	if timeout <= 0 {
		timeout = defaultGateTimeout
	}
	gctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The whole budget, queueing included: the gate promises an
		// answer (or a skip) within it.
		StartToCloseTimeout:    timeout,
		ScheduleToCloseTimeout: timeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:                fmt.Sprintf("gate: %d message(s) via %s", len(batch), s.settings.GateModel),
	})
	s.gating++
	s.attrsDirty = true
	var result pipeline.GateResult
	err := workflow.ExecuteActivity(gctx, pipeline.ActivityGate, req).Get(gctx, &result)
	s.gating--
	s.attrsDirty = true
	decision := "forward"
	switch {
	case err != nil:
		decision = "failed"
	case !result.Forward:
		decision = "skip"
	}
	s.count(MetricGateDecisions, map[string]string{"decision": decision})
	if err != nil || !result.Forward {
		why := result.Reason
		if err != nil {
			why = "gate failed, skipping: " + errorType(err)
			s.log.Warn("Gate failed; the batch is skipped", "error", err)
		}
		for _, in := range batch {
			s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionObserve, "reason", "gate: "+why)
			s.observe(in, workflow.Now(ctx))
		}
		return
	}
	// The turn sees the latest messages: the observed ones kept above,
	// then the batch.
	s.st.Observed = append([]pipeline.Observed(nil), observed...)
	s.counters.Gated++
	for _, in := range batch {
		s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionEngage, "reason", "gate: "+result.Reason)
	}
	s.forward(batch)
}
