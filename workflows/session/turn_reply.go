package session

import (
	"fmt"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// Turn outcomes that are not a failure.
const (
	outcomeAnswered    = "answered"
	outcomeSilent      = "silent"
	outcomeMuted       = "muted"
	outcomeHeartbeatOK = "heartbeat_ok"
)

// reply delivers the turn's answer: dressed (prefix, usage footer), cut
// into chunks, the first in a local activity.
func (s *TurnState) reply(env Env, reply string) []Effect {
	a := s.Active
	text, deliver := pipeline.NormalizeReply(reply)
	shownBlocks := a.Attempts.Shown != nil && len(a.Attempts.Shown.Blocks) > 0
	if deliver && shownBlocks {
		text = pipeline.AfterShown(text, a.Attempts.Shown.Text)
	}
	switch {
	case a.Heartbeat != "" && pipeline.HeartbeatAck(reply):
		return s.end(env, outcomeHeartbeatOK)
	case deliver && a.Options.Muted:
		return append([]Effect{Emit{ReactionsWanted{Refs: a.Refs, State: DoneState(env)}}}, s.end(env, outcomeMuted)...)
	case deliver && text != "":
		text = dress(env, text, s.Last, a.Options)
	}
	// The first chunk's delivery cuts the reply with its platform's rules
	// (pipeline.Delivery.Whole); the rest follow once it is out.
	a.Chunks, a.Next, a.Cut = nil, 0, false
	if deliver && text != "" {
		a.Chunks = []string{text}
	}
	s.Last.Chunks = len(a.Chunks)
	a.Phase = PhaseDelivering
	return s.deliverNext(env)
}

// deliverNext delivers the next chunk, or ends the turn when none is
// left.
func (s *TurnState) deliverNext(env Env) []Effect {
	a := s.Active
	if a.Next >= len(a.Chunks) {
		return s.answered(env)
	}
	i, anchor := a.Next, a.anchor()
	d := Deliver{TurnID: a.TurnID, Fast: i == 0 && !a.Slow, Delivery: pipeline.Delivery{
		Session:        env.Key,
		IdempotencyKey: fmt.Sprintf("%s/%s/%d", env.Key.WorkflowID(), a.TurnID, i),
		ThreadID:       anchor.ThreadID,
		Text:           a.Chunks[i],
		Index:          i,
		Total:          len(a.Chunks),
		Whole:          i == 0 && !a.Cut,
	}}
	shownBlocks := a.Attempts.Shown != nil && len(a.Attempts.Shown.Blocks) > 0
	if i == 0 && !a.NoAnchor && !shownBlocks {
		d.Delivery.ReplyTo = anchor.MessageID
	}
	if i == 0 && a.Attempts.Shown != nil && a.Attempts.Shown.PreviewID != "" {
		d.Delivery.Replaces = a.Attempts.Shown.PreviewID
	}
	if i == len(a.Chunks)-1 {
		// The last chunk carries the done reaction: the reactions part
		// attaches it and delivers the chunk.
		return []Effect{Emit{LastChunkReady{Deliver: d, Refs: a.Refs, State: DoneState(env)}}}
	}
	return []Effect{d}
}

// LastChunkReady hands a reply's last chunk to the reactions part, which
// makes it carry the done reaction (ReactionsState.Carry) and delivers
// it.
type LastChunkReady struct {
	Deliver Deliver
	Refs    []msgRef
	State   pipeline.ReactionState
}

func (LastChunkReady) isEvent() {}

// Delivered answers a chunk of the running turn's reply.
func (s *TurnState) Delivered(env Env, ev ChunkDelivered) []Effect {
	a := s.Active
	if a == nil || a.TurnID != ev.TurnID || a.Phase != PhaseDelivering || ev.Index != a.Next {
		return nil
	}
	if a.Stopped == "aborted" {
		return append([]Effect{Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionNone}}}, s.end(env, "aborted")...)
	}
	if ev.Failure != nil {
		if ev.Index == 0 && !a.Slow && !ev.Failure.NonRetryable {
			// The local activity's one attempt failed: the chunk goes
			// on as an activity, with the same idempotency key.
			a.Slow = true
			env.logger().Warn("First chunk not delivered at once; retrying it as an activity", "turn_id", a.TurnID, "error", ev.Failure)
			return s.redeliver(env)
		}
		return s.park(env, ev.Failure)
	}
	s.recordDelivery(DeliveryRecord{TurnID: a.TurnID, Chunk: ev.Index, PlatformMessageID: ev.Delivered.PlatformMessageID})
	s.Last.Delivered++
	if ev.Index == 0 && !a.Cut {
		a.Cut = true
		a.Chunks = append(a.Chunks[:1], ev.Delivered.Rest...)
		s.Last.Chunks = len(a.Chunks)
	}
	a.Next++
	channel := map[string]string{"channel": env.Key.Channel}
	out := []Effect{Count{Name: workflows.MetricDeliveries, Tags: map[string]string{"channel": env.Key.Channel, "outcome": "delivered"}}}
	if anchor := a.anchor(); ev.Index == 0 && a.Heartbeat == "" && !anchor.ReceivedAt.IsZero() {
		out = append(out, Time{Name: workflows.MetricFirstChunk, Tags: channel, Took: env.Now.Sub(anchor.ReceivedAt)})
	}
	return append(out, s.deliverNext(env)...)
}

// redeliver delivers the current chunk again as an activity.
func (s *TurnState) redeliver(env Env) []Effect {
	out := s.deliverNext(env)
	for i, e := range out {
		switch e := e.(type) {
		case Deliver:
			e.Fast = false
			out[i] = e
		case Emit:
			if last, ok := e.Event.(LastChunkReady); ok {
				last.Deliver.Fast = false
				out[i] = Emit{last}
			}
		}
	}
	return out
}

// park keeps a reply that could not be delivered until an operator asks
// for it again (`replyflow retry`): ❌ on its messages, and the phase
// that `sessions --stuck` finds.
func (s *TurnState) park(env Env, f *Failure) []Effect {
	a := s.Active
	a.Phase = PhaseParked
	s.Last.Outcome = "delivery_failed"
	s.Last.Error = fmt.Sprintf("delivery of chunk %d/%d failed (%s)", a.Next+1, len(a.Chunks), f.Type)
	env.logger().Error("Delivery parked: fix the cause, then `replyflow retry` this session", "turn_id", a.TurnID, "chunk", a.Next+1, "error", f)
	return []Effect{
		Emit{ReactionsWanted{Refs: a.Refs, State: pipeline.ReactionError}},
		Count{Name: workflows.MetricDeliveries, Tags: map[string]string{"channel": env.Key.Channel, "outcome": "failed"}},
		Count{Name: workflows.MetricParked, Tags: map[string]string{"channel": env.Key.Channel}},
	}
}

// Retry answers RetryAsked: a parked reply goes on from the chunk that
// failed, with the same idempotency key.
func (s *TurnState) Retry(env Env, ev RetryAsked) []Effect {
	a := s.Active
	if a == nil || a.Phase != PhaseParked {
		env.logger().Info("Retry ignored: nothing is parked", "by", ev.By)
		return nil
	}
	env.logger().Info("Retrying a parked delivery", "turn_id", a.TurnID, "by", ev.By, "reason", ev.Reason)
	a.Phase, a.Slow = PhaseDelivering, true
	s.Last.Outcome, s.Last.Error = "running", ""
	return s.deliverNext(env)
}

// answered ends a turn whose reply is out: the sender may go on without
// a mention for a while (sticky credits).
func (s *TurnState) answered(env Env) []Effect {
	a := s.Active
	shownBlocks := a.Attempts.Shown != nil && len(a.Attempts.Shown.Blocks) > 0
	if len(a.Chunks) == 0 && !shownBlocks {
		return s.end(env, outcomeSilent)
	}
	var out []Effect
	if a.Heartbeat == "" {
		out = append(out, Emit{Answered{TurnID: a.TurnID, Messages: a.Messages, Thread: a.anchor().ThreadID}})
	}
	if len(a.Chunks) == 0 {
		out = append(out, Emit{ReactionsWanted{Refs: a.Refs, State: DoneState(env)}})
	}
	return append(out, s.end(env, outcomeAnswered)...)
}

// Answered tells engagement a reply went out in a thread (sticky
// credits for its senders).
type Answered struct {
	TurnID   string
	Messages []pipeline.Inbound
	Thread   string
}

func (Answered) isEvent() {}

func (s *TurnState) recordDelivery(d DeliveryRecord) {
	s.Deliveries = append(s.Deliveries, d)
	if over := len(s.Deliveries) - maxDeliveries; over > 0 {
		s.Deliveries = append([]DeliveryRecord(nil), s.Deliveries[over:]...)
	}
}

// IsBotMessage is true for a platform message the session delivered.
func (s *TurnState) IsBotMessage(platformID string) bool {
	for _, d := range s.Deliveries {
		if d.PlatformMessageID == platformID {
			return true
		}
	}
	return false
}

// dress puts the reply prefix in front of a reply and the usage footer
// (and a note that /think was ignored) under it.
func dress(env Env, text string, rec *TurnRecord, opts TurnOptions) string {
	if tmpl := env.Settings.ReplyPrefix; tmpl != "" {
		provider, _, _ := strings.Cut(rec.Model, "/")
		text = pipeline.RenderReplyPrefix(tmpl, map[string]string{"model": rec.Model, "provider": provider, "think": string(opts.Think)}) + text
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
