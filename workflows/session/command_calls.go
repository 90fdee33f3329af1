package session

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Start-to-close timeouts of the commands' activities.
const (
	// storeCallTimeout bounds a read of the store or a schedule call
	// (/context, /heartbeat).
	storeCallTimeout = 15 * time.Second
	// exportMinTimeout: an export sends a whole document, so it gets at
	// least this even where a chunk's delivery timeout is shorter.
	exportMinTimeout = time.Minute
)

// Compaction is a /compact under way: the chain it tries, one model
// after another as a turn does, and the attempts that failed.
type Compaction struct {
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id,omitempty"`
	Focus     string `json:"focus,omitempty"`
	// Sender asked for it: the compaction counts against their budget
	// too, as their turns do.
	Sender string `json:"sender,omitempty"`
	// Models are the chain, or the chat's chosen model alone.
	Models []string `json:"models"`
	// Next is the model the attempt under way asks.
	Next int `json:"next"`
	// Failed are the failed attempts, "model: type" (at most one a model).
	Failed []string `json:"failed,omitempty"`
}

// work starts the activity behind /context, /compact, /export or
// /heartbeat; its Returned brings the answer.
func (x *commandRun) work() string {
	switch cmd := x.p.Command; {
	case cmd == pipeline.CommandCompact && (x.view.Busy || x.r.Compacting()):
		return "⚠️ A turn is running or waiting; send /compact again once it is answered."
	case cmd == pipeline.CommandHeartbeat && x.p.HeartbeatAction != "" && !x.env.IsOwner(x.in):
		return "⚠️ Only owners may change the heartbeat."
	}
	if x.r.full(x.env) {
		return tooManyCalls
	}
	env, r, ref := x.env, x.r, refOf(x.in)
	switch x.p.Command {
	case pipeline.CommandContext:
		req := pipeline.ContextRequest{Session: env.Key, Group: x.in.ChatType == pipeline.ChatGroup, Observed: x.view.Observed, ObservedTokens: x.view.ObservedTokens}
		c := r.newCall(callContext, ref)
		c.Context, c.Model = &req, x.view.Model
		x.out = append(x.out, r.track(c, Call{
			Key: c.Key, Activity: pipeline.ActivityDescribeContext, Args: []any{req}, Output: new(pipeline.ContextReport),
			Timeout: storeCallTimeout, Summary: "describe the next prompt (/context)",
		}))
	case pipeline.CommandCompact:
		models := env.Settings.Models
		if o := x.saved.ModelOverride; o != "" {
			models = []string{o}
		}
		r.Compaction = &Compaction{MessageID: ref.ID, ThreadID: ref.Thread, Focus: x.p.Focus, Sender: x.in.SenderID, Models: models}
		x.out = append(x.out, r.compactNext(env)...)
	case pipeline.CommandExport:
		c := r.newCall(callExport, ref)
		req := pipeline.ExportRequest{Session: env.Key, IdempotencyKey: env.Key.WorkflowID() + "/export/" + ref.ID, ThreadID: ref.Thread, ReplyTo: ref.ID}
		x.out = append(x.out, r.track(c, Call{
			Key: c.Key, Activity: pipeline.ActivityExportTranscript, Args: []any{req}, Output: new(pipeline.ExportResult),
			Timeout: max(env.Settings.DeliveryTimeout.D(), exportMinTimeout), Summary: "export the transcript (/export)",
		}))
	case pipeline.CommandHeartbeat:
		x.out = append(x.out, x.heartbeat(ref))
	}
	return ""
}

// heartbeat asks the schedule to show, set, remove or run the chat's
// heartbeat.
func (x *commandRun) heartbeat(ref msgRef) Effect {
	env, action := x.env, x.p.HeartbeatAction
	c := x.r.newCall(callHeartbeat, ref)
	c.Action, c.HeartbeatLine = action, x.c.HeartbeatLine()
	call := Call{Key: c.Key, Args: []any{env.Key}, Timeout: storeCallTimeout, Summary: strings.TrimSpace("/heartbeat " + action)}
	switch action {
	case pipeline.HeartbeatSet:
		call.Activity, call.Output = pipeline.ActivityUpsertHeartbeat, new(pipeline.HeartbeatInfo)
		call.Args = []any{pipeline.HeartbeatRequest{Session: env.Key, Spec: *x.p.Heartbeat, By: sender(x.in)}}
	case pipeline.HeartbeatOff:
		call.Activity = pipeline.ActivityDeleteHeartbeat
	case pipeline.HeartbeatNow:
		call.Activity = pipeline.ActivityTriggerHeartbeat
	default:
		call.Activity, call.Output = pipeline.ActivityDescribeHeartbeat, new(pipeline.HeartbeatInfo)
	}
	return x.r.track(c, call)
}

// compactNext asks the compaction's next model, or answers that it
// failed when none is left.
func (s *RepliesState) compactNext(env Env) []Effect {
	k := s.Compaction
	if k.Next >= len(k.Models) {
		env.logger().Error("/compact failed", "attempts", strings.Join(k.Failed, ", "))
		return s.compactDone(env, false, "⚠️ The conversation could not be compacted ("+strings.Join(k.Failed, ", ")+"); it is unchanged.")
	}
	c := s.newCall(callCompact, msgRef{ID: k.MessageID, Thread: k.ThreadID})
	req := pipeline.CompactRequest{Session: env.Key, Key: k.MessageID, Model: k.Models[k.Next], Focus: k.Focus, Sender: k.Sender}
	return []Effect{s.track(c, Call{
		Key: c.Key, Activity: pipeline.ActivityCompactTranscript, Args: []any{req}, Output: new(pipeline.CompactResult),
		Timeout: env.Settings.TurnTimeout.D(), Summary: "summarize the transcript (/compact)",
	})}
}

// compacted answers a compaction attempt: a failure that moves on tries
// the next model.
func (s *RepliesState) compacted(env Env, ev Returned) []Effect {
	k := s.Compaction
	if ev.Failure == nil {
		res := ev.Output.(*pipeline.CompactResult)
		if res.Summarized == 0 {
			return s.compactDone(env, false, "Nothing to compact: the conversation is empty.")
		}
		return s.compactDone(env, true, fmt.Sprintf("Compacted: %d message(s) became a summary of about %d tokens (%s). The conversation goes on from it.",
			res.Summarized, res.SummaryTokens, res.Model))
	}
	typ := modelFailureType(ev.Failure)
	k.Failed = append(k.Failed, k.Models[k.Next]+": "+typ)
	k.Next++
	if !pipeline.MovesToNextModel(typ) {
		k.Next = len(k.Models)
	}
	return s.compactNext(env)
}

func (s *RepliesState) compactDone(env Env, compacted bool, text string) []Effect {
	ref := msgRef{ID: s.Compaction.MessageID, Thread: s.Compaction.ThreadID}
	s.Compaction = nil
	return append([]Effect{Emit{CompactionFinished{Compacted: compacted}}}, s.Answer(env, ref, text)...)
}

// modelFailureType is the model error type a failed model attempt
// counts as: its own when it is one, else a timeout.
func modelFailureType(f *Failure) string {
	switch f.Type {
	case pipeline.ErrRateLimited, pipeline.ErrOverloaded, pipeline.ErrTimeout, pipeline.ErrAuth, pipeline.ErrBilling,
		pipeline.ErrContextOverflow, pipeline.ErrContentFilter, pipeline.ErrModelNotFound, pipeline.ErrFormat:
		return f.Type
	}
	return pipeline.ErrTimeout
}

// commandReturned answers the Returned of a command's activity: its
// answer, or ✅ alone when the activity was the answer (an export).
func (s *RepliesState) commandReturned(env Env, c PendingCall, ev Returned) []Effect {
	var text string
	switch c.Kind {
	case callCompact:
		if s.Compaction == nil {
			return nil
		}
		return s.compacted(env, ev)
	case callContext:
		text = contextAnswer(env, c, ev)
	case callExport:
		text = exportAnswer(env, ev)
	case callHeartbeat:
		text = heartbeatAnswer(env, c, ev)
	}
	if text == "" {
		return []Effect{Emit{ReactionsWanted{Refs: []msgRef{c.ref()}, State: pipeline.ReactionDone}}}
	}
	return s.Answer(env, c.ref(), text)
}

func contextAnswer(env Env, c PendingCall, ev Returned) string {
	if ev.Failure != nil {
		env.logger().Error("/context not answered", "error", ev.Failure)
		return "⚠️ The context could not be read right now (" + cmp.Or(ev.Failure.Type, "error") + "); try again in a moment."
	}
	return pipeline.RenderContext(*ev.Output.(*pipeline.ContextReport), *c.Context, c.Model)
}

// exportAnswer is "" for a transcript that went out: the activity
// answered in the chat itself.
func exportAnswer(env Env, ev Returned) string {
	if ev.Failure != nil {
		env.logger().Error("/export failed", "error", ev.Failure)
		return "⚠️ The export could not be sent (" + cmp.Or(ev.Failure.Type, "error") + "); try again later."
	}
	if ev.Output.(*pipeline.ExportResult).Messages == 0 {
		return "Nothing to export: the conversation is empty."
	}
	return ""
}

func heartbeatAnswer(env Env, c PendingCall, ev Returned) string {
	f := ev.Failure
	switch {
	case f == nil && c.Action == pipeline.HeartbeatOff:
		return "Heartbeat off."
	case f == nil && c.Action == pipeline.HeartbeatNow:
		return "Heartbeat triggered: the checklist is looked at now."
	case f == nil:
		return pipeline.RenderHeartbeatInfo(*ev.Output.(*pipeline.HeartbeatInfo), c.HeartbeatLine)
	case f.Type == pipeline.ErrHeartbeatRequest || f.Type == pipeline.ErrNoHeartbeat:
		// The schedule's own words: what is wrong with the request.
		return "⚠️ " + f.Message
	}
	env.logger().Error("/heartbeat failed", "action", c.Action, "error", f)
	return "⚠️ The heartbeat could not be changed right now (" + cmp.Or(f.Type, "error") + "); try again in a moment."
}
