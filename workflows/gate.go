package workflows

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
func (en *engagement) gateMessage(in pipeline.Inbound, now time.Time) {
	if en.settings.GateModel == "" || en.turnRunning() {
		en.observe(in, now)
		return
	}
	if len(en.st.GateBuffer) == 0 {
		en.st.GateSeq++
		en.armGateFlush(en.st.GateSeq)
	}
	en.st.GateBuffer = append(en.st.GateBuffer, in)
	en.st.GateFlushAt = now.Add(en.settings.Queue.Debounce.D())
	en.touch()
}

// busy is true while the gate model is being asked.
func (en *engagement) busy() bool { return en.gating > 0 }

// gatePending is true while a gated batch waits for the gate model.
func (en *engagement) gatePending() bool { return len(en.st.GateBuffer) > 0 }

// dropGateBuffer keeps a pending gated batch as observed context: a
// mention or a reply to the bot bypasses the gate and discards it.
func (en *engagement) dropGateBuffer(now time.Time) {
	for _, in := range en.st.GateBuffer {
		en.observe(in, now)
	}
	en.st.GateBuffer = nil
}

// resume re-arms the gate's window a previous run left open.
func (en *engagement) resume() {
	if len(en.st.GateBuffer) > 0 {
		en.armGateFlush(en.st.GateSeq)
	}
}

// armGateFlush asks the gate once the batch's window has passed.
func (en *engagement) armGateFlush(gen int) {
	workflow.Go(en.ctx, func(ctx workflow.Context) {
		for {
			if en.st.GateSeq != gen || len(en.st.GateBuffer) == 0 {
				return
			}
			wait := en.st.GateFlushAt.Sub(workflow.Now(ctx))
			if wait <= 0 {
				break
			}
			timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: fmt.Sprintf("debounce %s before the gate", wait)})
			if timer.Get(ctx, nil) != nil {
				return
			}
		}
		en.runGate(ctx)
	})
}

// runGate asks the gate model about the batch: forward starts one turn
// that sees the latest messages and anchors no reply; anything else (no,
// an error, a timeout, output that is not the strict JSON) skips, and the
// batch is observed.
func (en *engagement) runGate(ctx workflow.Context) {
	batch := en.st.GateBuffer
	en.st.GateBuffer = nil
	now := workflow.Now(ctx)
	if en.turnRunning() {
		for _, in := range batch {
			en.observe(in, now)
		}
		return
	}
	req := pipeline.GateRequest{Session: en.key, Batch: turnMessages(batch)}
	keep := max(pipeline.GateContext-len(batch), 0)
	observed := en.st.Observed[max(len(en.st.Observed)-keep, 0):]
	for _, o := range observed {
		req.Context = append(req.Context, pipeline.TurnMessage{SenderName: o.Sender, Text: o.Text, At: o.At})
	}
	for _, in := range batch {
		req.IndirectMention = req.IndirectMention || pipeline.MatchesAlias(in.Text, en.settings.Aliases)
	}
	timeout := en.settings.GateTimeout.D()
	if timeout <= 0 {
		timeout = defaultGateTimeout
	}
	gctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             fmt.Sprintf("gate: %d message(s) via %s", len(batch), en.settings.GateModel),
	})
	en.gating++
	en.touch()
	var result pipeline.GateResult
	err := workflow.ExecuteActivity(gctx, pipeline.ActivityGate, req).Get(gctx, &result)
	en.gating--
	en.touch()
	if err != nil || !result.Forward {
		why := result.Reason
		if err != nil {
			why = "gate failed, skipping: " + errorType(err)
			en.log.Warn("Gate failed; the batch is skipped", "error", err)
		}
		for _, in := range batch {
			en.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionObserve, "reason", "gate: "+why)
			en.observe(in, workflow.Now(ctx))
		}
		return
	}
	// The turn sees the latest messages: the observed ones kept above,
	// then the batch.
	en.st.Observed = append([]pipeline.Observed(nil), observed...)
	en.counters.Gated++
	for _, in := range batch {
		en.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionEngage, "reason", "gate: "+result.Reason)
	}
	en.forward(batch)
}
