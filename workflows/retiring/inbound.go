package retiring

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

const (
	// dedupeWindow is how long a message ID is remembered after it was
	// last seen.
	dedupeWindow = 20 * time.Minute
)

// intake is the part that takes messages in: it owns IntakeState (the
// dedupe window, the debounce windows and their timers, the chat's /queue
// override, when the last message came) and hands each flushed batch to
// dispatch, which the main loop wires to the turns. It touches no other
// state.
type intake struct {
	*runEnv
	st       *IntakeState
	dispatch func(Batch)
}

// admit counts a new message and reports true, or false for one already
// seen within the dedupe window.
func (s *intake) admit(id string, now time.Time) bool {
	if s.seen(id, now) {
		s.counters.Duplicates++
		s.log.Debug("Duplicate inbound ignored", "message_id", id)
		return false
	}
	s.counters.Inbound++
	s.st.LastInboundAt = now
	s.attrsDirty = true
	return true
}

// seen reports whether id was seen within the dedupe window, and slides
// the window: the entry moves to the end with the current time.
func (s *intake) seen(id string, now time.Time) bool {
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

func (s *intake) bufferMessage(in pipeline.Inbound, key pipeline.BufferKey, window time.Duration) {
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

func (s *intake) buffer(key pipeline.BufferKey) *Buffer {
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
func (s *intake) armFlush(key pipeline.BufferKey, gen int) {
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
func (s *intake) flushBuffer(key pipeline.BufferKey) {
	for i, b := range s.st.Buffers {
		if b.Key == key {
			s.st.Buffers = append(s.st.Buffers[:i:i], s.st.Buffers[i+1:]...)
			s.dispatch(Batch{Messages: b.Messages, Queue: s.queueSettings()})
			return
		}
	}
}

// buffering is true while a debounce window is open.
func (s *intake) buffering() bool { return len(s.st.Buffers) > 0 }

// takeBuffers empties every debounce window (a /stop) and returns what
// they held.
func (s *intake) takeBuffers() []Buffer {
	buffers := s.st.Buffers
	s.st.Buffers = nil
	return buffers
}

// resume re-arms the debounce windows a previous run left open.
func (s *intake) resume() {
	now := workflow.Now(s.ctx)
	for i, b := range s.st.Buffers {
		if s.v.hardened && b.FirstAt.IsZero() {
			// Carried from a run without the maximum wait: it counts
			// from now.
			s.st.Buffers[i].FirstAt = now
		}
		s.armFlush(b.Key, b.Gen)
	}
}

// queueSettings are the session's queue settings: its /queue override over
// the channel's defaults.
func (s *intake) queueSettings() pipeline.QueueSettings {
	return s.st.QueueOverride.Apply(s.settings.Queue)
}

// resetQueue drops the chat's /queue override.
func (s *intake) resetQueue() { s.st.QueueOverride = nil }

// patchQueue merges a /queue command into the chat's override.
func (s *intake) patchQueue(p *pipeline.QueuePatch) {
	s.st.QueueOverride = s.st.QueueOverride.Merge(p)
}
