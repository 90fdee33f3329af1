package retiring

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// runControlCommand answers the chat-control commands and the messages
// that are only directives, in runs with changeControl; false leaves the
// message to runCommand (the older commands, and every error).
func (s *session) runControlCommand(in pipeline.Inbound, p pipeline.Parsed) bool {
	if !s.v.control || p.Error != "" {
		return false
	}
	var text string
	switch p.Command {
	case pipeline.CommandDirectives, pipeline.CommandThink, pipeline.CommandVerbose, pipeline.CommandUsage:
		if !p.DirectivesOnly {
			text = s.showSetting(p.Command)
			break
		}
		if text = s.refuseDirectives(in, p.Directives, false); text != "" {
			break
		}
		if p.Directives.Model != nil {
			s.turns.setModel(*p.Directives.Model)
		}
		if p.Directives.Queue != nil {
			s.intake.patchQueue(p.Directives.Queue)
		}
		s.control.apply(p.Directives)
		s.saveSettings()
		text = "Set for this chat: " + p.Directives.Describe() + "."
	case pipeline.CommandHelp:
		text = pipeline.RenderHelp(s.isOwner(in), s.closedToMembers())
	case pipeline.CommandWhoami:
		text = pipeline.RenderWhoami(in.Channel+":"+in.SenderID, s.isOwner(in))
	case pipeline.CommandSend:
		text = s.setSend(in, p.Send)
	case pipeline.CommandContext:
		s.replies.work(in, func(ctx workflow.Context) string { return s.describeContext(ctx, in) })
		return true
	case pipeline.CommandCompact:
		if s.turns.running() || s.turns.queued() || s.intake.buffering() || s.compacting {
			text = "⚠️ A turn is running or waiting; send /compact again once it is answered."
			break
		}
		s.compacting = true
		s.replies.work(in, func(ctx workflow.Context) string {
			defer func() { s.compacting = false }()
			return s.compact(ctx, in, p.Focus)
		})
		return true
	case pipeline.CommandExport:
		s.replies.work(in, func(ctx workflow.Context) string { return s.export(ctx, in) })
		return true
	case pipeline.CommandHeartbeat:
		if p.HeartbeatAction != "" && !s.isOwner(in) {
			text = "⚠️ Only owners may change the heartbeat."
			break
		}
		s.replies.work(in, func(ctx workflow.Context) string { return s.heartbeatCommand(ctx, in, p) })
		return true
	default:
		return false
	}
	s.replies.answer(in.MessageID, in.ThreadID, text)
	return true
}

// closedToMembers names the settings only owners raise in this run, for
// /help; runs before changeMembers close none.
func (s *session) closedToMembers() []string {
	if !s.v.members {
		return nil
	}
	return pipeline.ClosedToMembers(s.settings.MemberSettings)
}

// showSetting answers /think, /verbose or /usage alone.
func (s *session) showSetting(cmd pipeline.CommandName) string {
	c := s.st.ControlState
	switch cmd {
	case pipeline.CommandThink:
		level := c.Think
		if level == "" {
			level = pipeline.ThinkOff
		}
		return "Reasoning effort: " + string(level) + ". Change it with /think off|low|medium|high."
	case pipeline.CommandVerbose:
		return "Tool lines: " + onOff(c.Verbose) + ". Change them with /verbose on|off."
	case pipeline.CommandUsage:
		return pipeline.RenderUsageTotals(c.UsageTotal, s.st.Counters.Turns, c.UsageMode)
	}
	return "Send /help for what I understand here."
}

// setSend is /send: owners mute or unmute every reply in the chat.
func (s *session) setSend(in pipeline.Inbound, on *bool) string {
	if on == nil {
		if s.st.Muted {
			return "Replies in this chat are muted: turns run, nothing is sent. Owners unmute with /send on."
		}
		return "Replies in this chat are sent. Owners mute them with /send off."
	}
	if !s.isOwner(in) {
		return "⚠️ Only owners may mute or unmute this chat."
	}
	s.st.Muted = !*on
	s.saveSettings()
	if s.st.Muted {
		return "Muted: turns still run, but no reply is sent here until /send on."
	}
	return "Unmuted: replies are sent here again."
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// describeContext asks the store what the next prompt holds.
func (s *session) describeContext(ctx workflow.Context, in pipeline.Inbound) string {
	req := pipeline.ContextRequest{Session: s.key, Group: in.ChatType == pipeline.ChatGroup, Observed: len(s.st.Observed)}
	for _, o := range s.st.Observed {
		req.ObservedTokens += pipeline.EstimateTokens(o.Text)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    15 * time.Second,
		ScheduleToCloseTimeout: time.Minute,
		Summary:                "describe the next prompt (/context)",
	})
	var report pipeline.ContextReport
	if err := workflow.ExecuteActivity(ctx, pipeline.ActivityDescribeContext, req).Get(ctx, &report); err != nil {
		s.log.Error("/context not answered", "error", err)
		return "⚠️ The context could not be read right now (" + cmp.Or(errorType(err), "error") + "); try again in a moment."
	}
	return pipeline.RenderContext(report, req, s.turns.primaryModel())
}

// compact summarizes the transcript with the turn's model chain: the
// next model is tried after a failure that moves on, as in a turn.
func (s *session) compact(ctx workflow.Context, in pipeline.Inbound, focus string) string {
	models, strict := s.turns.chain()
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    s.settings.TurnTimeout.D(),
		ScheduleToCloseTimeout: s.settings.TurnTimeout.D() + queueAllowance,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:                "summarize the transcript (/compact)",
	})
	var failed []string
	for _, model := range models {
		req := pipeline.CompactRequest{Session: s.key, Key: in.MessageID, Model: model, Focus: focus}
		var res pipeline.CompactResult
		err := workflow.ExecuteActivity(ctx, pipeline.ActivityCompactTranscript, req).Get(ctx, &res)
		if err == nil {
			if res.Summarized == 0 {
				return "Nothing to compact: the conversation is empty."
			}
			s.counters.Resets++
			return fmt.Sprintf("Compacted: %d message(s) became a summary of about %d tokens (%s). The conversation goes on from it.",
				res.Summarized, res.SummaryTokens, res.Model)
		}
		typ := modelErrorType(err)
		failed = append(failed, model+": "+typ)
		if !pipeline.MovesToNextModel(typ) || strict {
			break
		}
	}
	s.log.Error("/compact failed", "attempts", strings.Join(failed, ", "))
	return "⚠️ The conversation could not be compacted (" + strings.Join(failed, ", ") + "); it is unchanged."
}

// export sends the transcript as a document (the activity answers in the
// chat itself); only a failure is answered here.
func (s *session) export(ctx workflow.Context, in pipeline.Inbound) string {
	deadline := s.settings.DeliveryDeadline.D()
	if deadline <= 0 {
		deadline = defaultDeliveryDeadline
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    max(s.settings.DeliveryTimeout.D(), time.Minute),
		ScheduleToCloseTimeout: deadline,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
		Summary:                "export the transcript (/export)",
	})
	req := pipeline.ExportRequest{Session: s.key, IdempotencyKey: s.key.WorkflowID() + "/export/" + in.MessageID, ThreadID: in.ThreadID, ReplyTo: in.MessageID}
	var res pipeline.ExportResult
	if err := workflow.ExecuteActivity(ctx, pipeline.ActivityExportTranscript, req).Get(ctx, &res); err != nil {
		s.log.Error("/export failed", "error", err)
		return "⚠️ The export could not be sent (" + cmp.Or(errorType(err), "error") + "); try again later."
	}
	if res.Messages == 0 {
		return "Nothing to export: the conversation is empty."
	}
	return ""
}

// heartbeatCommand shows, sets, removes or runs the chat's heartbeat.
func (s *session) heartbeatCommand(ctx workflow.Context, in pipeline.Inbound, p pipeline.Parsed) string {
	ctx = workflow.WithActivityOptions(ctx, heartbeatActivityOptions("/heartbeat "+p.HeartbeatAction))
	var info pipeline.HeartbeatInfo
	var err error
	switch p.HeartbeatAction {
	case pipeline.HeartbeatSet:
		req := pipeline.HeartbeatRequest{Session: s.key, Spec: *p.Heartbeat, By: in.Channel + ":" + in.SenderID}
		if err = workflow.ExecuteActivity(ctx, pipeline.ActivityUpsertHeartbeat, req).Get(ctx, &info); err == nil {
			return pipeline.RenderHeartbeatInfo(info, s.control.heartbeatLine())
		}
	case pipeline.HeartbeatOff:
		if err = workflow.ExecuteActivity(ctx, pipeline.ActivityDeleteHeartbeat, s.key).Get(ctx, nil); err == nil {
			return "Heartbeat off."
		}
	case pipeline.HeartbeatNow:
		if err = workflow.ExecuteActivity(ctx, pipeline.ActivityTriggerHeartbeat, s.key).Get(ctx, nil); err == nil {
			return "Heartbeat triggered: the checklist is looked at now."
		}
	default:
		if err = workflow.ExecuteActivity(ctx, pipeline.ActivityDescribeHeartbeat, s.key).Get(ctx, &info); err == nil {
			return pipeline.RenderHeartbeatInfo(info, s.control.heartbeatLine())
		}
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && (app.Type() == pipeline.ErrHeartbeatRequest || app.Type() == pipeline.ErrNoHeartbeat) {
		return "⚠️ " + app.Message()
	}
	s.log.Error("/heartbeat failed", "action", p.HeartbeatAction, "error", err)
	return "⚠️ The heartbeat could not be changed right now (" + cmp.Or(errorType(err), "error") + "); try again in a moment."
}
