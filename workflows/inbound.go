package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const (
	// dedupeWindow is how long a message ID is remembered after it was
	// last seen.
	dedupeWindow = 20 * time.Minute
	// maxOverflowLines bounds the summaries kept for one turn's prompt.
	maxOverflowLines = 50
)

// accept runs a new message through dedupe, commands and directives, and
// the debounce window.
func (s *session) accept(in pipeline.Inbound) {
	now := workflow.Now(s.ctx)
	if s.seen(in.MessageID, now) {
		s.st.Counters.Duplicates++
		s.log.Debug("Duplicate inbound ignored", "message_id", in.MessageID)
		return
	}
	s.st.Counters.Inbound++
	s.st.LastInboundAt = now
	s.attrsDirty = true

	if pipeline.IsClaimCode(strings.TrimSpace(in.Text)) {
		// Before the permission gate: claiming is how an owner gets in.
		s.claim(in, strings.TrimSpace(in.Text))
		return
	}
	if !s.permitted(in.Channel + ":" + in.SenderID) {
		// Never given to the model; visible in the state query.
		s.st.Counters.Denied++
		s.st.LastDenied = in.MessageID
		s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionDenied)
		return
	}
	s.seeParticipant(in, now)
	if in.Action != "" {
		s.pressButton(in)
		return
	}
	parsed := pipeline.ParseMessage(in.Text)
	key := pipeline.BufferKeyOf(in)
	if parsed.Command != "" {
		// No 👀: the answer comes at once and ✅ would replace it
		// within the coalescing window.
		s.flushBuffer(key)
		s.runCommand(in, parsed)
		return
	}
	switch s.engage(in, now).Decision {
	case pipeline.DecisionGate:
		s.gateMessage(in, now)
		return
	case pipeline.DecisionObserve:
		s.observe(in, now)
		return
	}
	if len(s.st.GateBuffer) > 0 {
		s.dropGateBuffer(now)
	}
	s.react(refsOf(in), pipeline.ReactionReceived)
	in.Text = parsed.Text
	settings := parsed.Queue.Apply(s.queueSettings())
	if parsed.IsDirective() || len(in.Media) > 0 || settings.Debounce <= 0 {
		// Commands, directives and media skip the window, after what
		// was pending for their key, so the order holds.
		s.flushBuffer(key)
		s.dispatch(Batch{Messages: []pipeline.Inbound{in}, Queue: settings})
		return
	}
	s.bufferMessage(in, key, settings.Debounce.D())
}

// seen reports whether id was seen within the dedupe window, and slides
// the window: the entry moves to the end with the current time.
func (s *session) seen(id string, now time.Time) bool {
	cutoff := now.Add(-dedupeWindow)
	kept := s.st.Seen[:0]
	found := false
	key := id
	if s.v.hardened {
		// Entries carried from a run before the digest keep their ID.
		key = seenKey(id)
	}
	for _, e := range s.st.Seen {
		if !e.At.After(cutoff) {
			continue
		}
		if e.ID == key || e.ID == id {
			found = true
			continue
		}
		kept = append(kept, e)
	}
	kept = append(kept, SeenMessage{ID: key, At: now})
	if over := len(kept) - seenCapacity; over > 0 {
		kept = kept[over:]
	}
	s.st.Seen = kept
	return found
}

func (s *session) bufferMessage(in pipeline.Inbound, key pipeline.BufferKey, window time.Duration) {
	now := workflow.Now(s.ctx)
	b := s.buffer(key)
	if b == nil {
		if s.v.hardened && len(s.st.Buffers) >= maxOpenBuffers {
			s.flushBuffer(s.st.Buffers[0].Key)
		}
		s.st.BufferSeq++
		s.st.Buffers = append(s.st.Buffers, Buffer{Key: key, Gen: s.st.BufferSeq})
		b = &s.st.Buffers[len(s.st.Buffers)-1]
		if s.v.hardened {
			b.FirstAt = now
		}
		s.armFlush(key, b.Gen)
	}
	b.Messages = append(b.Messages, in)
	b.FlushAt = s.flushAt(b.FirstAt, now, window)
	if len(b.Messages) >= maxBufferedMessages || (s.v.hardened && overBudget(b.Messages)) {
		s.flushBuffer(key)
	}
}

func (s *session) buffer(key pipeline.BufferKey) *Buffer {
	for i := range s.st.Buffers {
		if s.st.Buffers[i].Key == key {
			return &s.st.Buffers[i]
		}
	}
	return nil
}

// armFlush flushes the buffer of key when its window has passed. A message
// that re-arms the window only moves FlushAt; this timer then sleeps the
// remainder, so a burst costs one timer per window, not one per message.
func (s *session) armFlush(key pipeline.BufferKey, gen int) {
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		for {
			b := s.buffer(key)
			if b == nil || b.Gen != gen {
				return
			}
			wait := b.FlushAt.Sub(workflow.Now(ctx))
			if wait <= 0 {
				s.flushBuffer(key)
				return
			}
			timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{
				Summary: fmt.Sprintf("debounce %s: %d message(s) from %s in thread %s", wait, len(b.Messages), key.Sender, key.Thread),
			})
			if err := timer.Get(ctx, nil); err != nil {
				return
			}
		}
	})
}

// flushBuffer turns the buffer of key, if any, into one batch.
func (s *session) flushBuffer(key pipeline.BufferKey) {
	for i, b := range s.st.Buffers {
		if b.Key == key {
			s.st.Buffers = append(s.st.Buffers[:i:i], s.st.Buffers[i+1:]...)
			s.dispatch(Batch{Messages: b.Messages, Queue: s.queueSettings()})
			return
		}
	}
}

// queueSettings are the session's queue settings: its /queue override over
// the channel's defaults.
func (s *session) queueSettings() pipeline.QueueSettings {
	return s.st.QueueOverride.Apply(s.settings.Queue)
}

// dispatch hands a flushed batch to the running turn or the queue,
// according to its queue mode.
func (s *session) dispatch(b Batch) {
	s.attrsDirty = true
	a := s.st.Active
	if a == nil {
		s.enqueue(b)
		return
	}
	steerable := a.Phase == PhaseModel && !a.Interrupted && b.Last().ThreadID == a.threadID() &&
		(!s.v.hardened || (len(a.Steered)+len(a.SteeredBacklog)+len(b.Messages) <= maxSteered &&
			sizeOf(a.Steered)+sizeOf(a.SteeredBacklog)+sizeOf(b.Messages) <= maxSteeredBytes))
	switch b.Queue.Mode {
	case pipeline.QueueSteer:
		if steerable {
			a.Steered = append(a.Steered, b.Messages...)
			s.st.Counters.Steered += len(b.Messages)
			return
		}
	case pipeline.QueueSteerBacklog:
		if steerable {
			a.SteeredBacklog = append(a.SteeredBacklog, b.Messages...)
			s.st.Counters.Steered += len(b.Messages)
		}
	case pipeline.QueueInterrupt:
		if a.Phase == PhaseModel && !a.Interrupted {
			s.interrupt(a)
			s.st.Queue = append([]Batch{b}, s.st.Queue...)
			if s.v.hardened {
				// The newest batch goes first; the cap and the byte
				// bound take from the oldest behind it.
				for len(s.st.Queue) > 1 && (len(s.st.Queue) > max(b.Queue.Cap, 1) || queuedBytes(s.st.Queue) > maxQueuedBytes) {
					s.dropQueued(1, b.Queue.Drop)
				}
			}
			return
		}
	}
	s.enqueue(b)
}

// enqueue adds a batch to the queue, applying the cap and drop policy.
func (s *session) enqueue(b Batch) {
	if s.v.hardened {
		s.enqueueBounded(b)
		return
	}
	if limit := max(b.Queue.Cap, 1); len(s.st.Queue) >= limit {
		switch b.Queue.Drop {
		case pipeline.DropNew:
			s.drop(b, "the queue is at its cap")
			return
		case pipeline.DropSummarize:
			s.summarize(s.st.Queue[0])
		default:
			s.drop(s.st.Queue[0], "the queue is at its cap")
		}
		s.st.Queue = s.st.Queue[1:]
	}
	b.Queued = b.Queued || s.st.Active != nil
	s.st.Queue = append(s.st.Queue, b)
}

// enqueueBounded adds a batch to the queue; past the cap in batches or
// the byte bound, the drop policy decides what goes: the newest batch
// (new), or the oldest, dropped (old) or kept as a summary line
// (summarize).
func (s *session) enqueueBounded(b Batch) {
	b.Queued = b.Queued || s.st.Active != nil
	s.st.Queue = append(s.st.Queue, b)
	for len(s.st.Queue) > 1 && (len(s.st.Queue) > max(b.Queue.Cap, 1) || queuedBytes(s.st.Queue) > maxQueuedBytes) {
		if b.Queue.Drop == pipeline.DropNew {
			s.dropQueued(len(s.st.Queue)-1, b.Queue.Drop)
			return
		}
		s.dropQueued(0, b.Queue.Drop)
	}
}

// dropQueued takes batch i off the queue under the drop policy.
func (s *session) dropQueued(i int, policy pipeline.DropPolicy) {
	b := s.st.Queue[i]
	s.st.Queue = append(s.st.Queue[:i:i], s.st.Queue[i+1:]...)
	if policy == pipeline.DropSummarize {
		s.summarize(b)
		return
	}
	s.drop(b, "the queue is at its cap")
}

// drop gives up on a batch: its reactions are cleared, since it will get
// no answer.
func (s *session) drop(b Batch, why string) {
	s.st.Counters.Dropped += len(b.Messages)
	for _, m := range b.Messages {
		s.log.Info("Queued message dropped", "why", why, "message_id", m.MessageID)
	}
	s.react(refsOf(b.Messages...), pipeline.ReactionNone)
}

// summarize drops a batch but keeps a line of each message for the next
// turn's prompt; the messages' reactions follow that turn.
func (s *session) summarize(b Batch) {
	s.st.Counters.Dropped += len(b.Messages)
	o := s.st.Overflow
	if o == nil {
		o = &Overflow{}
		s.st.Overflow = o
	}
	for _, m := range b.Messages {
		o.Dropped++
		if len(o.Summaries) >= maxOverflowLines {
			s.react(refsOf(m), pipeline.ReactionNone)
			continue
		}
		name := m.SenderName
		if name == "" {
			name = m.SenderID
		}
		o.Summaries = append(o.Summaries, pipeline.SummaryLine(name, m.Text))
		o.MessageIDs = append(o.MessageIDs, m.MessageID)
	}
}

// msgRef names a user message whose reaction the session manages.
type msgRef struct{ ID, Thread string }

func refsOf(msgs ...pipeline.Inbound) []msgRef {
	refs := make([]msgRef, len(msgs))
	for i, m := range msgs {
		refs[i] = msgRef{ID: m.MessageID, Thread: m.ThreadID}
	}
	return refs
}
