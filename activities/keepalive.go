package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// keepAlive heartbeats at a third of the heartbeat timeout, shows typing
// every TypingInterval (at once first) and "thinking" after ThinkingAfter,
// until ctx is done. It reports whether it showed "thinking".
func (a *Activities) keepAlive(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest, live *liveAnswer) (showedThinking bool) {
	heartbeatEvery := 10 * time.Second
	if timeout := activity.GetInfo(ctx).HeartbeatTimeout; timeout > 0 {
		heartbeatEvery = timeout / 3
	}
	heartbeat := time.NewTicker(heartbeatEvery)
	defer heartbeat.Stop()
	thinking := time.NewTimer(a.ThinkingAfter)
	defer thinking.Stop()
	if len(req.ThinkingOn) == 0 {
		thinking.Stop()
	}
	var typing <-chan time.Time
	if every := a.typingInterval(req.Session.Channel); every > 0 {
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		typing = ticker.C
		a.showTyping(ctx, out, req)
	}
	for {
		showTyping, showThinking := false, false
		select {
		case <-ctx.Done():
			return showedThinking
		case <-typing:
			showTyping = true
		case <-thinking.C:
			showThinking = true
		case <-heartbeat.C:
		}
		// Nothing is sent once the turn ended: select picks at random
		// among ready cases, and the SDK logs a heartbeat it refuses.
		if ctx.Err() != nil {
			return showedThinking
		}
		live.heartbeat(ctx)
		// Typing stops once the answer shows in a preview.
		if showTyping && !live.previewing() {
			a.showTyping(ctx, out, req)
		}
		if showThinking {
			// The reaction waits its turn in the chat's delivery budget
			// for at most one heartbeat interval: the next heartbeat is
			// never late for it.
			reactCtx, cancel := context.WithTimeout(ctx, heartbeatEvery)
			a.showThinking(reactCtx, out, req)
			cancel()
			showedThinking = true
		}
	}
}

func (a *Activities) typingInterval(channel string) time.Duration {
	if d, ok := a.TypingByChannel[channel]; ok {
		return d
	}
	return a.TypingInterval
}

func (a *Activities) showThinking(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest) {
	for _, id := range req.ThinkingOn {
		change := pipeline.ReactionChange{Session: req.Session, MessageID: id, ThreadID: req.ThreadID, State: pipeline.ReactionThinking}
		if err := out.SetReaction(ctx, change); err != nil && ctx.Err() == nil {
			a.Logger.Debug("thinking reaction not shown", "session", req.Session.WorkflowID(), "message_id", id, "error", err)
		}
	}
}

// takeBackThinking clears the "thinking" a cancelled attempt showed. The
// workflow clears the messages as soon as it stops a turn (/stop, an
// interrupt), but the attempt only learns of the cancellation at a
// heartbeat, and may have shown "thinking" after that clear: whichever
// comes last, the message ends cleared.
func (a *Activities) takeBackThinking(cancelled context.Context, out adapters.Outbound, req pipeline.TurnRequest) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cancelled), 5*time.Second)
	defer cancel()
	for _, id := range req.ThinkingOn {
		change := pipeline.ReactionChange{Session: req.Session, MessageID: id, ThreadID: req.ThreadID, State: pipeline.ReactionNone}
		if err := out.SetReaction(ctx, change); err != nil {
			a.Logger.Warn("thinking reaction of a cancelled turn not cleared", "session", req.Session.WorkflowID(), "message_id", id, "error", err)
		}
	}
}

func (a *Activities) showTyping(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest) {
	if err := out.Typing(ctx, req.Session, req.ThreadID); err != nil && ctx.Err() == nil {
		a.Logger.Debug("typing indicator not shown", "session", req.Session.WorkflowID(), "error", err)
	}
}
