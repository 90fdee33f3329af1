package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// showPreview sends the preview, or edits it to the answer so far, when
// its pacing allows; otherwise the text waits for the next tick. Its
// calls are of adapters.PriorityPreview: the chat's delivery budget
// skips one that a reply could need the room of, and the next tick
// carries the newer text. A preview the platform refuses is given up:
// the final answer is then delivered as usual, and the turn does not
// fail for it.
func (p *presenter) showPreview(ctx context.Context, answer string) {
	ctx = adapters.WithPriority(ctx, adapters.PriorityPreview)
	if p.previewBroken {
		return
	}
	text, _ := pipeline.Showable(answer)
	p.pendingPreview = pipeline.PreviewText(text, p.limit)
	if p.pendingPreview == p.shownText {
		return
	}
	now := time.Now()
	if !p.cfg.Pacing.Due(now, p.start, p.lastPreview) {
		return
	}
	p.lastPreview = now
	previewID := ""
	p.live.update(func(s *pipeline.Shown) { previewID = s.PreviewID })
	if previewID == "" {
		id, err := p.out.Send(ctx, p.delivery(p.req.Session.WorkflowID()+"/"+p.req.TurnID+"/preview", p.pendingPreview, 0, 1))
		if adapters.Skipped(err) {
			return // no room now: the next tick tries with newer text
		}
		if err != nil {
			p.giveUpPreview(err)
			return
		}
		p.shownText = p.pendingPreview
		p.live.update(func(s *pipeline.Shown) { s.PreviewID, s.Text = id, p.shownText })
		p.record()
		return
	}
	edit := pipeline.Edit{Session: p.req.Session, PlatformMessageID: previewID, ThreadID: p.req.ThreadID, Text: p.pendingPreview}
	if err := p.out.Edit(ctx, edit); err != nil {
		if adapters.MessageGone(err) {
			// Deleted: no later edit can pass. The final delivery
			// finds it gone too, and sends the answer anew.
			p.previewBroken = true
			p.a.Logger.Info("The preview is gone (deleted); the answer is delivered when complete", "session", p.req.Session.WorkflowID(), "turn_id", p.req.TurnID)
			return
		}
		if ctx.Err() == nil {
			// A refused edit (a rate limit) is skipped; the next one,
			// or the final answer, catches up.
			p.a.Logger.Debug("Preview not edited", "session", p.req.Session.WorkflowID(), "turn_id", p.req.TurnID, "error", err)
		}
		return
	}
	p.shownText = p.pendingPreview
	p.live.update(func(s *pipeline.Shown) { s.Text = p.shownText })
}

func (p *presenter) giveUpPreview(err error) {
	p.previewBroken = true
	if p.ctx.Err() == nil {
		p.a.Logger.Warn("Preview not sent; the answer is delivered when complete", "session", p.req.Session.WorkflowID(), "turn_id", p.req.TurnID, "error", err)
	}
}

// sendQueued sends the queued blocks whose pause is over, in order,
// each recorded (and heartbeated) before the next: a block is sent once,
// and the attempt after a crash continues after the last one recorded.
// A block the platform refuses stops block sending for this attempt: the
// rest of the answer goes with the final delivery. Blocks wait behind
// the chat's finals (adapters.PriorityProgress).
func (p *presenter) sendQueued(ctx context.Context) {
	ctx = adapters.WithPriority(ctx, adapters.PriorityProgress)
	for len(p.queued) > 0 && time.Since(p.lastBlock) >= p.cfg.BlockPause {
		b := p.queued[0]
		key := fmt.Sprintf("%s/%s/block/%d", p.req.Session.WorkflowID(), p.req.TurnID, p.sent)
		id, err := p.out.Send(ctx, p.delivery(key, b.text, p.sent, p.sent+2))
		if err != nil {
			if ctx.Err() == nil {
				p.a.Logger.Warn("Block not sent; the rest of the answer is delivered when complete", "session", p.req.Session.WorkflowID(), "turn_id", p.req.TurnID, "block", p.sent, "error", err)
			}
			p.queued, p.blocksOff = nil, true
			return
		}
		p.queued = p.queued[1:]
		p.sent++
		p.lastBlock = time.Now()
		answerSoFar := b.end
		p.live.update(func(s *pipeline.Shown) {
			s.Blocks = append(s.Blocks, id)
			s.Text = p.answerText[:answerSoFar]
		})
		p.record()
	}
}

// delivery is a preview or block message: the first in reply to the
// turn's message, in its thread. Total is never the last chunk's (more
// follows), except for the preview, whose sending ends typing.
func (p *presenter) delivery(key, text string, index, total int) pipeline.Delivery {
	d := pipeline.Delivery{Session: p.req.Session, IdempotencyKey: key, ThreadID: p.req.ThreadID, Text: text, Index: index, Total: total}
	if index == 0 && len(p.req.Messages) > 0 {
		d.ReplyTo = p.req.Messages[len(p.req.Messages)-1].MessageID
	}
	return d
}

// markStopped ends the preview of a step that was cancelled (/stop, an
// interrupt): it keeps what was written and says it was stopped.
func (a *Activities) markStopped(cancelled context.Context, out adapters.Outbound, req pipeline.TurnRequest, shown *pipeline.Shown) {
	if shown == nil || shown.PreviewID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cancelled), 5*time.Second)
	defer cancel()
	text := pipeline.PreviewText(shown.Text, a.chunkLimit(req.Session)-len([]rune(pipeline.StoppedMark))) + pipeline.StoppedMark
	edit := pipeline.Edit{Session: req.Session, PlatformMessageID: shown.PreviewID, ThreadID: req.ThreadID, Text: text}
	if err := out.Edit(ctx, edit); err != nil {
		a.Logger.Warn("Stopped preview not marked as stopped", "session", req.Session.WorkflowID(), "turn_id", req.TurnID, "error", err)
	}
}

// rememberStopped keeps a stopped stream's preview in the transcript as
// the user saw it (the words written, marked stopped), with the user's
// text: the next turn knows what was said. Best effort: the stop
// already took effect.
func (a *Activities) rememberStopped(cancelled context.Context, transcriptID string, req pipeline.TurnRequest, shown *pipeline.Shown) {
	if shown.PreviewID == "" || shown.Text == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cancelled), 5*time.Second)
	defer cancel()
	if err := a.remember(ctx, transcriptID, req, shown.Text+pipeline.StoppedMark, time.Now()); err != nil {
		a.Logger.Warn("The stopped answer was not saved in the transcript", "session", req.Session.WorkflowID(), "turn_id", req.TurnID, "error", err)
	}
}
