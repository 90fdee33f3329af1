package session

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// The gate's bounds and pacing.
const (
	// defaultGateTimeout is the gate model's whole budget, queueing
	// included, when the settings give none: the gate promises an answer
	// (or a skip) within it.
	defaultGateTimeout = 2500 * time.Millisecond
	// maxGateCalls bounds the batches the gate model is asked about at
	// once (each is at most one full batch in State). A call lasts at
	// most the gate's timeout and a batch goes only after its debounce
	// window or at its size bound, so more than a few at once means the
	// chat floods; a batch past the bound is observed instead.
	maxGateCalls = 4
)

// gateTimer is the one timer of the gated batch: its debounce window.
const gateTimer TimerID = "gate"

// gateKeyPrefix starts the Key of a gate call, "gate/<gen>".
const gateKeyPrefix = "gate/"

func gateKey(gen int) string { return gateKeyPrefix + strconv.Itoa(gen) }

// GateKey reports whether a Returned's key is a gate call's.
func GateKey(key string) bool { return strings.HasPrefix(key, gateKeyPrefix) }

// GateCall is a gated batch the gate model is being asked about; Gen
// names its call.
type GateCall struct {
	Gen   int                `json:"gen"`
	Batch []pipeline.Inbound `json:"batch"`
}

// gate holds a message of a gated chat that no trigger addressed until
// its batch's debounce window closes (or it reaches its size bound), and
// the gate model decides about the batch. With no gate model, or while a
// turn runs (no gate is asked then), the message is only observed.
func (s *EngagementState) gate(env Env, in pipeline.Inbound, turnRunning bool) []Effect {
	if env.Settings.GateModel == "" || turnRunning {
		s.observe(env, in)
		return nil
	}
	if len(s.GateBuffer) == 0 {
		s.GateSeq++
		s.GateFirstAt = env.Now
	}
	s.GateBuffer = append(s.GateBuffer, in)
	// The channel's debounce window: the chat's /queue override is for
	// the batches of turns, not the gate's.
	s.GateFlushAt = flushAt(env, s.GateFirstAt, env.Settings.Queue.Debounce.D())
	if len(s.GateBuffer) >= maxBufferedMessages || sizeOf(s.GateBuffer) >= maxBufferedBytes {
		return append([]Effect{Disarm{Timer: gateTimer}}, s.ask(env)...)
	}
	if len(s.GateBuffer) == 1 {
		return []Effect{s.armGate()}
	}
	return nil
}

func (s *EngagementState) armGate() Arm {
	return Arm{Timer: gateTimer, At: s.GateFlushAt, Summary: fmt.Sprintf("debounce %d message(s) before the gate", len(s.GateBuffer))}
}

// GateFired answers the gate timer: the batch goes to the gate model,
// unless a message moved its time later (the timer is armed again for
// the rest), or a turn runs, when it is observed.
func (s *EngagementState) GateFired(env Env, turnRunning bool) []Effect {
	if len(s.GateBuffer) == 0 {
		return nil
	}
	if s.GateFlushAt.After(env.Now) {
		return []Effect{s.armGate()}
	}
	if turnRunning {
		for _, in := range s.takeGateBuffer() {
			s.observe(env, in)
		}
		return nil
	}
	return s.ask(env)
}

// ask takes the gated batch out of its buffer and asks the gate model
// about it; the next gated message starts a new batch.
func (s *EngagementState) ask(env Env) []Effect {
	gen, batch := s.GateSeq, s.takeGateBuffer()
	if len(s.GateCalls) >= maxGateCalls {
		env.logger().Warn("Gated batch observed without asking the gate: too many gate calls under way", "messages", len(batch), "calls", len(s.GateCalls))
		for _, in := range batch {
			s.observe(env, in)
		}
		return nil
	}
	s.GateCalls = append(s.GateCalls, GateCall{Gen: gen, Batch: batch})
	timeout := env.Settings.GateTimeout.D()
	if timeout <= 0 {
		timeout = defaultGateTimeout
	}
	return []Effect{Call{
		Key:      gateKey(gen),
		Activity: pipeline.ActivityGate,
		Args:     []any{s.gateRequest(env, batch)},
		Output:   new(pipeline.GateResult),
		Timeout:  timeout,
		// One try: a gate answer that comes late is no use to a chat.
		Attempts: 1,
		Summary:  fmt.Sprintf("gate: %d message(s) via %s", len(batch), env.Settings.GateModel),
	}}
}

// gateRequest is the batch with the latest observed messages before it,
// GateContext messages in all.
func (s *EngagementState) gateRequest(env Env, batch []pipeline.Inbound) pipeline.GateRequest {
	req := pipeline.GateRequest{Session: env.Key}
	for _, o := range s.latestObserved(len(batch)) {
		req.Context = append(req.Context, pipeline.TurnMessage{SenderName: o.Sender, Text: o.Text, At: o.At})
	}
	for _, in := range batch {
		req.Batch = append(req.Batch, pipeline.TurnMessage{MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName, Text: in.TextWithMedia(), At: in.ReceivedAt})
		req.IndirectMention = req.IndirectMention || pipeline.MatchesAlias(in.Text, env.Settings.Aliases)
	}
	return req
}

// latestObserved are the observed messages that go with a batch of n
// messages: GateContext messages in all.
func (s *EngagementState) latestObserved(n int) []pipeline.Observed {
	keep := max(pipeline.GateContext-n, 0)
	return s.Observed[max(len(s.Observed)-keep, 0):]
}

// Gated answers a gate call's Returned: forward starts one turn that
// sees the latest messages (the observed ones that went with the batch,
// then the batch) and anchors no reply; anything else (no, an error, a
// timeout, output that is not the strict JSON) skips, and the batch is
// observed. queue is the chat's queue settings, for the turn's batch.
func (s *EngagementState) Gated(env Env, ev Returned, queue pipeline.QueueSettings) []Effect {
	i := slices.IndexFunc(s.GateCalls, func(c GateCall) bool { return gateKey(c.Gen) == ev.Key })
	if i < 0 {
		return nil
	}
	batch := s.GateCalls[i].Batch
	s.GateCalls = slices.Delete(s.GateCalls, i, i+1)
	result, _ := ev.Output.(*pipeline.GateResult)
	if ev.Failure != nil || result == nil || !result.Forward {
		why, decision := "gate answered nothing, skipping", "skip"
		switch {
		case ev.Failure != nil:
			why, decision = "gate failed, skipping: "+ev.Failure.Type, "failed"
			env.logger().Warn("Gate failed; the batch is skipped", "error", ev.Failure)
		case result != nil:
			why = result.Reason
		}
		for _, in := range batch {
			env.logger().Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionObserve, "reason", "gate: "+why)
			s.observe(env, in)
		}
		return []Effect{gateMetric(decision)}
	}
	s.Observed = slices.Clone(s.latestObserved(len(batch)))
	s.Counts.Gated++
	for _, in := range batch {
		env.logger().Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionEngage, "reason", "gate: "+result.Reason)
	}
	return []Effect{
		Emit{ReactionsWanted{Refs: refsOf(batch...), State: pipeline.ReactionReceived}},
		Emit{BatchReady{Batch: Batch{Messages: batch, Queue: queue, NoAnchor: true}}},
		gateMetric("forward"),
	}
}

// gateMetric counts one gate decision: forward, skip or failed.
func gateMetric(decision string) Effect {
	return Count{Name: workflows.MetricGateDecisions, Tags: map[string]string{"decision": decision}}
}

// dropGateBuffer keeps a pending gated batch as observed context: an
// engaged message bypasses the gate.
func (s *EngagementState) dropGateBuffer(env Env) []Effect {
	if len(s.GateBuffer) == 0 {
		return nil
	}
	for _, in := range s.takeGateBuffer() {
		s.observe(env, in)
	}
	return []Effect{Disarm{Timer: gateTimer}}
}

func (s *EngagementState) takeGateBuffer() []pipeline.Inbound {
	batch := s.GateBuffer
	s.GateBuffer, s.GateFirstAt, s.GateFlushAt = nil, time.Time{}, time.Time{}
	return batch
}

// Resume starts again what a previous run carried: the gated batch's
// timer. A gate call's answer never reaches this run, so a batch still
// being asked about is observed.
func (s *EngagementState) Resume(env Env) []Effect {
	for _, c := range s.GateCalls {
		for _, in := range c.Batch {
			s.observe(env, in)
		}
	}
	s.GateCalls = nil
	if len(s.GateBuffer) == 0 {
		return nil
	}
	return []Effect{s.armGate()}
}

// Busy is true while the gate model is being asked: a run continues as
// new only when no gate call is under way.
func (s *EngagementState) Busy() bool { return len(s.GateCalls) > 0 }

// GatePending is true while a gated batch waits for the gate model.
func (s *EngagementState) GatePending() bool { return len(s.GateBuffer) > 0 }
