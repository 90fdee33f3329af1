package retiring

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// Turn outcomes of runs that took changeControl.
const (
	// outcomeHeartbeatOK: a heartbeat turn found nothing to report.
	outcomeHeartbeatOK = "heartbeat_ok"
	// outcomeMuted: the reply was kept back (/send off).
	outcomeMuted = "muted"
)

// heartbeatOutcome is what a heartbeat turn's outcome means to /status.
func heartbeatOutcome(turnOutcome string) string {
	switch turnOutcome {
	case outcomeHeartbeatOK, "silent":
		return HeartbeatAcked
	case "answered":
		return HeartbeatDelivered
	case outcomeMuted:
		return HeartbeatMuted
	case "failed", "delivery_failed":
		return HeartbeatFailed
	}
	return "stopped (" + turnOutcome + ")"
}

// mergedDirectives are the directives of a turn's batches, a later
// message's over an earlier one's; nil for none.
func mergedDirectives(batches []Batch) *pipeline.Directives {
	var out *pipeline.Directives
	for _, b := range batches {
		if b.Directives != nil {
			merged := b.Directives.Over(out)
			out = &merged
		}
	}
	return out
}

// turnNotice is a notice of the session under the turn's anchor: none
// for a heartbeat turn (no message to answer) or a muted chat.
func (s *turns) turnNotice(a *ActiveTurn, anchor pipeline.Inbound, text string) {
	if a.Heartbeat != "" || activeOptions(a).Muted {
		s.log.Info("Turn notice kept back", "turn_id", a.TurnID, "heartbeat", a.Heartbeat != "")
		return
	}
	s.notice(anchor.MessageID, anchor.ThreadID, text)
}

// dressReply puts the reply prefix in front of a reply and the usage
// footer (and a note that /think was ignored) under it.
func (s *turns) dressReply(text string, rec *TurnRecord, opts TurnOptions) string {
	if tmpl := s.settings.ReplyPrefix; tmpl != "" {
		provider, _, _ := strings.Cut(rec.Model, "/")
		text = pipeline.RenderReplyPrefix(tmpl, map[string]string{
			"model": rec.Model, "provider": provider, "think": string(opts.Think),
		}) + text
	}
	var footer []string
	switch {
	case opts.Usage != pipeline.UsageTokens && opts.Usage != pipeline.UsageFull:
	case rec.Usage == nil:
		footer = append(footer, "— usage not reported by "+rec.Model)
	default:
		footer = append(footer, pipeline.UsageFooter(*rec.Usage, opts.Usage))
	}
	if opts.ThinkNote && rec.ThinkIgnored && opts.Think != "" && opts.Think != pipeline.ThinkOff {
		footer = append(footer, "— /think "+string(opts.Think)+" was ignored: "+rec.Model+" takes no reasoning effort")
	}
	if len(footer) > 0 {
		text += "\n\n" + strings.Join(footer, "\n")
	}
	return text
}

// showToolLines sends a round's /verbose lines under the turn's anchor
// before the turn goes on, so they come before its answer. A failure is
// logged and the turn goes on: the lines are a courtesy.
func (s *turns) showToolLines(ctx workflow.Context, a *ActiveTurn, anchor pipeline.Inbound, round pipeline.ToolRound) {
	d := pipeline.Delivery{
		Session:        s.key,
		IdempotencyKey: fmt.Sprintf("%s/%s/tools/%d", s.key.WorkflowID(), a.TurnID, a.Step),
		ThreadID:       anchor.ThreadID,
		ReplyTo:        anchor.MessageID,
		Text:           toolLines(round),
		Total:          1,
	}
	if _, err := s.deliver(ctx, d); err != nil {
		s.log.Warn("Tool lines not delivered (/verbose)", "turn_id", a.TurnID, "error", err)
	}
}

// toolLines are the /verbose lines of one tool round, one per call.
func toolLines(round pipeline.ToolRound) string {
	lines := make([]string, 0, len(round.Calls))
	for i, call := range round.Calls {
		var res pipeline.ToolResult
		if i < len(round.Results) {
			res = round.Results[i]
		}
		lines = append(lines, pipeline.ToolLine(call, res))
	}
	return strings.Join(lines, "\n")
}
