package workflows

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const defaultDeliveryDeadline = 10 * time.Minute

// startTurn takes the next batch (in collect mode, everything queued for
// the same thread) off the queue and runs a turn for it in a coroutine.
func (s *session) startTurn() {
	batches := s.takeTurnBatches()
	var msgs []pipeline.Inbound
	texts := make([]string, len(batches))
	for i, b := range batches {
		msgs = append(msgs, b.Messages...)
		texts[i] = b.Text()
	}
	text := texts[0]
	if batches[0].Queue.Mode == pipeline.QueueCollect && batches[0].Queued {
		text = pipeline.RenderCollected(texts)
	}
	refs := refsOf(msgs...)
	text = s.engagedText(text, workflow.Now(s.ctx), msgs[len(msgs)-1].ChatType == pipeline.ChatGroup)
	if s.st.AbortedLastRun {
		text = pipeline.AbortedNotice + "\n\n" + text
		s.st.AbortedLastRun = false
	}
	if o := s.st.Overflow; o != nil {
		text = pipeline.RenderOverflow(o.Dropped, o.Summaries) + "\n\n" + text
		for _, id := range o.MessageIDs {
			if r := s.st.reaction(id); r != nil {
				refs = append(refs, msgRef{ID: id, Thread: r.ThreadID})
			}
		}
		s.st.Overflow = nil
	}
	s.st.TurnSeq++
	s.st.Counters.Turns++
	now := workflow.Now(s.ctx)
	a := &ActiveTurn{
		TurnID:    workflow.GetInfo(s.ctx).FirstRunID + "." + strconv.Itoa(s.st.TurnSeq),
		Messages:  msgs,
		Phase:     PhaseModel,
		NoAnchor:  batches[0].NoAnchor,
		StartedAt: now,
	}
	rec := &TurnRecord{TurnID: a.TurnID, StartedAt: now, Outcome: "running"}
	for _, r := range refs {
		rec.MessageIDs = append(rec.MessageIDs, r.ID)
	}
	s.st.Active, s.st.LastTurn = a, rec
	s.attrsDirty = true
	s.react(refs, pipeline.ReactionThinking)
	workflow.Go(s.ctx, func(ctx workflow.Context) { s.runTurn(ctx, a, rec, text, refs) })
}

func (s *session) takeTurnBatches() []Batch {
	head := s.st.Queue[0]
	if head.Queue.Mode != pipeline.QueueCollect {
		s.st.Queue = s.st.Queue[1:]
		return []Batch{head}
	}
	// Collect never merges across threads (the reply must land in one),
	// nor takes a batch that asked for another mode.
	thread := head.Last().ThreadID
	var taken, kept []Batch
	for _, b := range s.st.Queue {
		if b.Last().ThreadID == thread && b.Queue.Mode == pipeline.QueueCollect {
			taken = append(taken, b)
		} else {
			kept = append(kept, b)
		}
	}
	s.st.Queue = kept
	return taken
}

// runTurn runs the model steps of a turn, then delivers the reply chunk by
// chunk, recording each platform message ID before the next chunk.
func (s *session) runTurn(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, text string, refs []msgRef) {
	defer func() {
		s.requeueSteered(a)
		s.st.Active, s.cancelTurn = nil, nil
		rec.FinishedAt = workflow.Now(ctx)
		s.attrsDirty = true
	}()
	anchor := a.Messages[len(a.Messages)-1]
	thinkingOn := idsOf(refs)
	var result pipeline.TurnResult
	reset := false
	var rounds []pipeline.ToolRound
	maxSteps := max(s.settings.MaxSteps, 1)
	newTranscript := s.st.NewTranscript
	s.st.NewTranscript = false
	for {
		req := pipeline.TurnRequest{
			Session: s.key, TurnID: a.TurnID, ThreadID: anchor.ThreadID, Step: a.Step,
			Text: text, Messages: turnMessages(a.Messages), ThinkingOn: thinkingOn,
			Group: anchor.ChatType == pipeline.ChatGroup, NewTranscript: newTranscript,
			Rounds: rounds, NoTools: a.Step >= maxSteps-1,
		}
		newTranscript = false
		stepCtx, cancel := workflow.WithCancel(ctx)
		s.cancelTurn = cancel
		var err error
		result, err = s.askModels(stepCtx, req, rec)
		cancel()
		if err != nil && modelErrorType(err) == pipeline.ErrContextOverflow && !reset && !(s.v.hardened && a.stopped()) {
			// A fresh session, told to the user, and one more try, which
			// a /stop or an interrupt cancels like any step.
			reset = true
			s.st.Counters.Resets++
			s.sendNotice(anchor, pipeline.ReplyContextReset)
			req.NewTranscript = true
			retryCtx := ctx
			if s.v.hardened {
				var cancelRetry workflow.CancelFunc
				retryCtx, cancelRetry = workflow.WithCancel(ctx)
				s.cancelTurn = cancelRetry
				defer cancelRetry()
			}
			result, err = s.askModels(retryCtx, req, rec)
		}
		if s.v.hardened && a.stopped() {
			// A stop wins over whatever the step returned: an answer
			// that raced the cancellation is not delivered.
			s.endStopped(a, rec, refs)
			return
		}
		if err != nil {
			if a.stopped() {
				rec.Outcome = a.stopOutcome()
				// A cancelled step may still show ✍️ until it sees the
				// cancellation at its next heartbeat: clear after that.
				s.clearLater(refs, s.settings.TurnHeartbeatTimeout.D())
				return
			}
			s.failTurn(rec, refs, "agent turn failed", err)
			s.sendNotice(anchor, failureReply(modelErrorType(err)))
			return
		}
		a.Step++
		rec.Steps, rec.Model = a.Step, result.Model
		if len(result.ToolCalls) == 0 {
			break
		}
		if skipsResponse(result.ToolCalls) {
			result.Reply = "" // the model chose silence
			break
		}
		toolCtx, cancelTools := workflow.WithCancel(ctx)
		s.cancelTurn = cancelTools
		round := pipeline.ToolRound{Text: result.Reply, Calls: result.ToolCalls}
		var waited bool
		round.Results, waited = s.runTools(toolCtx, a, result.ToolCalls, anchor, refs)
		cancelTools()
		if a.stopped() {
			if s.v.hardened {
				s.endStopped(a, rec, refs)
				return
			}
			rec.Outcome = a.stopOutcome()
			s.clearLater(refs, s.settings.TurnHeartbeatTimeout.D())
			return
		}
		rounds = append(rounds, round)
		injected := append(a.Steered, a.SteeredBacklog...)
		a.Steered, a.SteeredBacklog = nil, nil
		thinkingOn = nil
		if waited {
			thinkingOn = idsOf(refs) // back from ⏳ to ✍️
		}
		if len(injected) > 0 {
			text = pipeline.RenderSteered(text, textsOf(injected))
			a.Messages = append(a.Messages, injected...)
			refs = append(refs, refsOf(injected...)...)
			thinkingOn = idsOf(refsOf(injected...))
			s.react(refsOf(injected...), pipeline.ReactionThinking)
		}
	}
	s.deliverReply(ctx, a, rec, result.Reply, anchor, refs)
}

func (s *session) deliverReply(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, reply string, anchor pipeline.Inbound, refs []msgRef) {
	text, deliver := pipeline.NormalizeReply(reply)
	var chunks []string
	if deliver {
		chunks = pipeline.Chunk(text, s.settings.ChunkLimit)
	}
	rec.Chunks = len(chunks)
	a.Phase = PhaseDelivering
	s.attrsDirty = true
	for i := 0; i < len(chunks); {
		if a.Aborted {
			rec.Outcome = "aborted"
			s.react(refs, pipeline.ReactionNone)
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
		if i == 0 && !a.NoAnchor {
			d.ReplyTo = anchor.MessageID
		}
		platformID, err := s.deliver(ctx, d)
		if err != nil {
			if !s.park(ctx, a, rec, refs, i, err) {
				return
			}
			continue // the same chunk (or the abort), with the same idempotency key
		}
		s.st.recordDelivery(DeliveryRecord{TurnID: a.TurnID, Chunk: i, PlatformMessageID: platformID})
		rec.Delivered++
		i++
	}
	rec.Outcome, rec.Error = "answered", ""
	if len(chunks) == 0 {
		rec.Outcome = "silent"
	} else {
		s.grantSticky(a.Messages, anchor.ThreadID)
	}
	s.react(refs, pipeline.ReactionDone)
}

// park holds a turn whose chunk could not be delivered within the deadline:
// ❌ on the user's messages, state delivery_failed, and a wait for the retry
// signal. It returns false if the wait was cancelled.
func (s *session) park(ctx workflow.Context, a *ActiveTurn, rec *TurnRecord, refs []msgRef, chunk int, err error) bool {
	s.failTurn(rec, refs, fmt.Sprintf("delivery of chunk %d/%d failed", chunk+1, rec.Chunks), err)
	rec.Outcome = "delivery_failed"
	a.Phase = PhaseParked
	s.attrsDirty = true
	s.log.Error("Delivery parked: fix the cause, then `replyflow retry` this session", "turn_id", a.TurnID, "chunk", chunk+1)
	if werr := workflow.Await(ctx, func() bool { return a.RetryRequested || a.Aborted }); werr != nil {
		return false
	}
	a.RetryRequested, a.Phase = false, PhaseDelivering
	rec.Outcome = "running"
	s.attrsDirty = true
	return true
}

// requeueSteered queues what was steered into a turn but never reached a
// model step, so no message is lost.
func (s *session) requeueSteered(a *ActiveTurn) {
	if len(a.Steered) == 0 {
		return
	}
	settings := s.queueSettings()
	settings.Mode = pipeline.QueueFollowup
	s.enqueue(Batch{Messages: a.Steered, Queue: settings, Queued: true})
	a.Steered = nil
}

// stopped is true once a /stop or an interrupt ended the turn; what runs
// after a stop is never delivered.
func (a *ActiveTurn) stopped() bool { return a.Aborted || a.Interrupted }

// stopOutcome names how a stopped turn ended. A /stop wins over an
// interrupt: it also dropped the batch that interrupted.
func (a *ActiveTurn) stopOutcome() string {
	if a.Aborted {
		return "aborted"
	}
	return "interrupted"
}

// endStopped closes a stopped turn: its messages' reactions are cleared at
// once (a cancelled model attempt takes back the ✍️ it showed itself, see
// activities.AgentTurn).
func (s *session) endStopped(a *ActiveTurn, rec *TurnRecord, refs []msgRef) {
	rec.Outcome = a.stopOutcome()
	for _, ref := range refs {
		if r := s.st.reaction(ref.ID); r != nil && r.State == pipeline.ReactionThinking {
			// The model attempt may have shown ✍️ on its own.
			r.Shown = true
		}
	}
	s.react(refs, pipeline.ReactionNone)
}

// interrupt cancels the running model step for a newer message.
func (s *session) interrupt(a *ActiveTurn) {
	a.Interrupted = true
	s.st.Counters.Interrupted++
	if s.cancelTurn != nil {
		s.cancelTurn()
	}
}

// failureReply is what the user is told when a turn fails.
func failureReply(errType string) string {
	switch errType {
	case pipeline.ErrFormat:
		return pipeline.ReplyFormatError
	case pipeline.ErrContentFilter:
		return pipeline.ReplyContentFilter
	}
	return pipeline.ReplyNoModel(errType)
}

// sendNotice delivers a short message from the session itself in the
// anchor's thread, like a command's answer.
func (s *session) sendNotice(anchor pipeline.Inbound, text string) {
	s.st.Notices++
	r := DirectReply{MessageID: anchor.MessageID, ThreadID: anchor.ThreadID, Text: text, Key: fmt.Sprintf("notice-%d", s.st.Notices)}
	s.sendReply(r)
}

func (s *session) deliver(ctx workflow.Context, d pipeline.Delivery) (string, error) {
	deadline := s.settings.DeliveryDeadline.D()
	if deadline <= 0 {
		deadline = defaultDeliveryDeadline
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    s.settings.DeliveryTimeout.D(),
		ScheduleToCloseTimeout: deadline,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
		Summary: fmt.Sprintf("deliver %d/%d to %s", d.Index+1, d.Total, s.key.Channel),
	})
	var out pipeline.Delivered
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityDeliver, d).Get(ctx, &out)
	return out.PlatformMessageID, err
}

// failTurn marks the batch ❌ and records why, so the state query and the
// UI's current details say what failed.
func (s *session) failTurn(rec *TurnRecord, refs []msgRef, what string, err error) {
	rec.Outcome, rec.Error = "failed", what
	if t := errorType(err); t != "" {
		rec.Error += " (" + t + ")"
	}
	s.log.Error("Turn failed", "turn_id", rec.TurnID, "what", what, "error", err)
	s.react(refs, pipeline.ReactionError)
}

func turnMessages(msgs []pipeline.Inbound) []pipeline.TurnMessage {
	out := make([]pipeline.TurnMessage, len(msgs))
	for i, in := range msgs {
		out[i] = pipeline.TurnMessage{MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName, Text: in.TextWithMedia(), At: in.ReceivedAt}
	}
	return out
}

func textsOf(msgs []pipeline.Inbound) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.TextWithMedia()
	}
	return out
}

func idsOf(refs []msgRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}
