package retiring

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
)

// fastDeliveryTimeout bounds the local activity that sends a reply's
// first chunk: it holds the workflow task, so it gets one short try, and
// anything slower goes the regular way.
const fastDeliveryTimeout = 5 * time.Second

// deliverChunk sends one chunk of a reply. In runs that took changeCost
// the first chunk goes out in a local activity, in the workflow task that
// took the model's answer: no activity task to schedule, start and
// complete, and no workflow task after it, so the reply is out sooner
// and the turn spends fewer actions and events. The result is recorded
// (a marker) when that task completes, before anything else is sent:
// a later chunk is a regular activity, which that task schedules. If the
// local attempt fails, the chunk goes the regular way with the same
// idempotency key, retried until the delivery deadline, and the session
// shows "delivering" meanwhile.
func (s *turns) deliverChunk(ctx workflow.Context, a *ActiveTurn, d pipeline.Delivery) (pipeline.Delivered, error) {
	if !s.v.cost {
		id, err := s.deliver(ctx, d)
		return pipeline.Delivered{PlatformMessageID: id}, err
	}
	if d.Index == 0 && !a.SlowDelivery {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: min(fastDeliveryTimeout, s.settings.DeliveryTimeout.D()),
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:             fmt.Sprintf("deliver %d/%d to %s", d.Index+1, d.Total, s.key.Channel),
		})
		var out pipeline.Delivered
		err := workflow.ExecuteLocalActivity(lctx, pipeline.ActivityDeliver, d).Get(lctx, &out)
		if err == nil {
			return out, nil
		}
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			// Refused for good (PlatformRejected): parked at once, as
			// the activity would be; a retry goes the regular way.
			a.SlowDelivery, s.attrsDirty = true, true
			return pipeline.Delivered{}, err
		}
		s.log.Warn("First chunk not delivered at once; retrying it as an activity", "turn_id", a.TurnID, "error", err)
	}
	if !a.SlowDelivery {
		a.SlowDelivery, s.attrsDirty = true, true
	}
	return s.deliverDurably(ctx, d)
}

// deliverDurably is deliver, with the whole answer.
func (e *runEnv) deliverDurably(ctx workflow.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
	deadline := e.settings.DeliveryDeadline.D()
	if deadline <= 0 {
		deadline = defaultDeliveryDeadline
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    e.settings.DeliveryTimeout.D(),
		ScheduleToCloseTimeout: deadline,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
		Summary: fmt.Sprintf("deliver %d/%d to %s", d.Index+1, d.Total, e.key.Channel),
	})
	var out pipeline.Delivered
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityDeliver, d).Get(ctx, &out)
	return out, err
}

func (s *turns) deliverReply(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, reply string, anchor pipeline.Inbound, refs []msgRef) {
	text, deliver := pipeline.NormalizeReply(reply)
	shownBlocks := a.Shown != nil && len(a.Shown.Blocks) > 0
	if deliver && shownBlocks {
		// The blocks are out: what follows them is the reply.
		text = pipeline.AfterShown(text, a.Shown.Text)
	}
	opts := activeOptions(a)
	switch {
	case a.Heartbeat != "" && pipeline.HeartbeatAck(reply):
		rec.Outcome = outcomeHeartbeatOK
		return
	case deliver && opts.Muted:
		// /send off: the turn ran and is in the transcript; nothing is
		// sent, and the messages show they were handled.
		rec.Outcome = outcomeMuted
		s.reactions.react(refs, pipeline.ReactionDone)
		return
	case deliver && s.v.control && text != "":
		text = s.dressReply(text, rec, opts)
	}
	var chunks []string
	if deliver && text != "" {
		chunks = s.chunk(text)
	}
	rec.Chunks = len(chunks)
	a.Phase = PhaseDelivering
	// With changeCost, a reply on the fast path stays "thinking" in the
	// search attributes (deliverChunk says when it is not).
	s.attrsDirty = !s.v.cost
	p := a.Progress
	if p == nil {
		p = &TurnProgress{Refs: refs}
	}
	p.Chunks, p.Next = chunks, 0
	s.deliverChunks(ctx, a, rec, p, anchor)
}

// deliverChunks delivers the reply's chunks from p.Next on, parking the
// turn when one cannot be delivered, and sets the messages' reactions
// when the last is out.
func (s *turns) deliverChunks(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, p *TurnProgress, anchor pipeline.Inbound) {
	chunks, refs := p.Chunks, p.Refs
	shownBlocks := a.Shown != nil && len(a.Shown.Blocks) > 0
	var carried []pipeline.ReactionChange
	var refused []string
	for p.Next < len(chunks) {
		i := p.Next
		if a.Aborted {
			rec.Outcome = "aborted"
			s.reactions.react(refs, pipeline.ReactionNone)
			return
		}
		d := pipeline.Delivery{
			Session:        s.key,
			IdempotencyKey: fmt.Sprintf("%s/%s/%d", s.key.WorkflowID(), a.TurnID, i),
			ThreadID:       anchor.ThreadID,
			Text:           chunks[i],
			Index:          i,
			Total:          len(chunks),
		}
		if i == 0 && !a.NoAnchor && !shownBlocks {
			d.ReplyTo = anchor.MessageID
		}
		if i == 0 && a.Shown != nil && a.Shown.PreviewID != "" {
			d.Replaces = a.Shown.PreviewID
		}
		if s.v.cost && i == len(chunks)-1 {
			carried = s.reactions.carry(ctx, refs, s.reactions.doneState())
			d.ThenReact = carried
		}
		delivered, err := s.deliverChunk(ctx, a, d)
		platformID := delivered.PlatformMessageID
		refused = delivered.ReactionsFailed
		if err != nil {
			s.count(MetricDeliveries, map[string]string{"channel": s.key.Channel, "outcome": "failed"})
			s.park(a, rec, refs, i, err)
			if !s.parkWait(ctx, a, rec) {
				return
			}
			continue // the same chunk (or the abort), with the same idempotency key
		}
		recordDelivery(s.st, DeliveryRecord{TurnID: a.TurnID, Chunk: i, PlatformMessageID: platformID})
		s.count(MetricDeliveries, map[string]string{"channel": s.key.Channel, "outcome": "delivered"})
		if i == 0 && a.Heartbeat == "" && !anchor.ReceivedAt.IsZero() {
			workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"channel": s.key.Channel}).
				Timer(MetricFirstChunk).Record(workflow.Now(ctx).Sub(anchor.ReceivedAt))
		}
		rec.Delivered++
		p.Next++
	}
	rec.Outcome, rec.Error = "answered", ""
	if len(chunks) == 0 && !shownBlocks {
		rec.Outcome = "silent"
	} else if a.Heartbeat == "" {
		s.engagement.grantSticky(a.Messages, anchor.ThreadID)
	}
	if carried != nil {
		s.reactions.carried(carried, refused)
		return
	}
	s.reactions.react(refs, pipeline.ReactionDone)
}

// chunk splits a reply for delivery: with the fence-safe chunker (on
// Slack, measured after rendering as mrkdwn), or with the one a run that
// started before it replays with.
func (s *turns) chunk(text string) []string {
	if s.v.slack && s.key.Channel == mrkdwn.Channel {
		return mrkdwn.Chunk(text, s.settings.ChunkLimit)
	}
	if s.v.hardened {
		return pipeline.Chunk(text, s.settings.ChunkLimit)
	}
	return pipeline.ChunkV1(text, s.settings.ChunkLimit)
}

// park holds a turn whose chunk could not be delivered within the deadline:
// ❌ on the user's messages, state delivery_failed; parkWait then waits for
// the retry signal.
func (s *turns) park(a *ActiveTurn, rec *TurnRecord, refs []msgRef, chunk int, err error) {
	s.failTurn(rec, refs, fmt.Sprintf("delivery of chunk %d/%d failed", chunk+1, rec.Chunks), err)
	rec.Outcome = "delivery_failed"
	a.Phase = PhaseParked
	s.count(MetricParked, map[string]string{"channel": s.key.Channel})
	s.attrsDirty = true
	s.log.Error("Delivery parked: fix the cause, then `replyflow retry` this session", "turn_id", a.TurnID, "chunk", chunk+1)
}

// parkWait waits for the retry signal (or a /stop) of a parked turn. It
// returns false if the wait was cancelled.
func (s *turns) parkWait(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord) bool {
	if werr := workflow.Await(ctx, func() bool { return a.RetryRequested || a.Aborted }); werr != nil {
		return false
	}
	a.RetryRequested, a.Phase = false, PhaseDelivering
	rec.Outcome = "running"
	s.attrsDirty = true
	return true
}
