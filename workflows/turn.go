package workflows

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// runTurn answers the oldest queued message: ✍️, the agent turn, the reply
// chunks in order, then ✅ and a scheduled clear (or ❌ on failure).
func (s *session) runTurn() {
	batch := s.st.Queue[:1]
	s.st.Queue = s.st.Queue[1:]
	anchor := batch[len(batch)-1]
	s.st.TurnSeq++
	turn := &TurnRecord{
		TurnID:    workflow.GetInfo(s.ctx).FirstRunID + "." + strconv.Itoa(s.st.TurnSeq),
		StartedAt: workflow.Now(s.ctx),
		Outcome:   "running",
	}
	for _, in := range batch {
		turn.MessageIDs = append(turn.MessageIDs, in.MessageID)
	}
	s.st.LastTurn = turn
	s.react(batch, pipeline.ReactionThinking)
	s.setStatus(StatusThinking)

	result, err := s.agentTurn(turn, anchor.ThreadID, batch)
	if err != nil {
		s.failTurn(turn, batch, "agent turn failed", err)
		return
	}
	turn.Model = result.Model
	chunks := pipeline.Chunk(result.Reply, s.settings.ChunkLimit)
	turn.Chunks = len(chunks)
	if len(chunks) > 0 {
		s.setStatus(StatusDelivering)
	}
	for i, text := range chunks {
		d := pipeline.Delivery{
			Session:        s.key,
			IdempotencyKey: fmt.Sprintf("%s/%s/%d", s.key.WorkflowID(), turn.TurnID, i),
			ThreadID:       anchor.ThreadID,
			Text:           text,
			Index:          i,
			Total:          len(chunks),
		}
		if i == 0 {
			d.ReplyTo = anchor.MessageID
		}
		platformID, err := s.deliver(d)
		if err != nil {
			s.failTurn(turn, batch, fmt.Sprintf("delivery of chunk %d/%d failed", i+1, len(chunks)), err)
			s.setStatus(StatusDeliveryFailed)
			return
		}
		s.st.recordDelivery(DeliveryRecord{TurnID: turn.TurnID, Chunk: i, PlatformMessageID: platformID})
		turn.Delivered++
	}
	turn.Outcome, turn.FinishedAt = "answered", workflow.Now(s.ctx)
	s.react(batch, pipeline.ReactionDone)
	s.setStatus(StatusIdle)
}

func (s *session) agentTurn(turn *TurnRecord, threadID string, batch []pipeline.Inbound) (pipeline.TurnResult, error) {
	req := pipeline.TurnRequest{Session: s.key, TurnID: turn.TurnID, ThreadID: threadID}
	for _, in := range batch {
		req.Messages = append(req.Messages, pipeline.TurnMessage{MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName, Text: in.Text})
	}
	ctx := workflow.WithActivityOptions(s.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: s.settings.TurnTimeout.D(),
		HeartbeatTimeout:    s.settings.TurnHeartbeatTimeout.D(),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    int32(s.settings.TurnAttempts),
		},
		Summary: fmt.Sprintf("agent turn %d (%d message(s))", s.st.TurnSeq, len(batch)),
	})
	var result pipeline.TurnResult
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityAgentTurn, req).Get(ctx, &result)
	return result, err
}

func (s *session) deliver(d pipeline.Delivery) (string, error) {
	ctx := workflow.WithActivityOptions(s.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: s.settings.DeliveryTimeout.D(),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    int32(s.settings.DeliveryAttempts),
		},
		Summary: fmt.Sprintf("deliver %d/%d to %s", d.Index+1, d.Total, s.key.Channel),
	})
	var out pipeline.Delivered
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityDeliver, d).Get(ctx, &out)
	return out.PlatformMessageID, err
}

// failTurn marks the batch ❌ and records why, so the state query and the
// UI's current details say what failed; the error clear is scheduled too.
func (s *session) failTurn(turn *TurnRecord, batch []pipeline.Inbound, what string, err error) {
	turn.Outcome, turn.FinishedAt = "failed", workflow.Now(s.ctx)
	turn.Error = what
	if t := errorType(err); t != "" {
		turn.Error += " (" + t + ")"
	}
	s.log.Error("Turn failed", "turn_id", turn.TurnID, "what", what, "error", err)
	s.react(batch, pipeline.ReactionError)
	s.setStatus(StatusIdle)
}
