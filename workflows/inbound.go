package workflows

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
	// maxBufferedMessages flushes a debounce window early, so a sender
	// who never pauses still gets answers.
	maxBufferedMessages = 50
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

// IntakeState is the durable state of the intake part.
type IntakeState struct {
	// Seen holds recently seen platform message IDs, least recently seen
	// first, so a message delivered twice is processed once.
	Seen []SeenMessage `json:"seen"`
	// Buffers are the open debounce windows, one per BufferKey.
	Buffers   []Buffer `json:"buffers"`
	BufferSeq int      `json:"buffer_seq"`
	// QueueOverride is the session's /queue setting, over the defaults.
	QueueOverride *pipeline.QueuePatch `json:"queue_override,omitempty"`
	LastInboundAt time.Time            `json:"last_inbound_at"`
}

// admit counts a new message and reports true, or false for one already
// seen within the dedupe window.
func (ik *intake) admit(id string, now time.Time) bool {
	if ik.seen(id, now) {
		ik.counters.Duplicates++
		ik.log.Debug("Duplicate inbound ignored", "message_id", id)
		return false
	}
	ik.counters.Inbound++
	ik.st.LastInboundAt = now
	ik.touch()
	return true
}

// seen reports whether id was seen within the dedupe window, and slides
// the window: the entry moves to the end with the current time.
func (ik *intake) seen(id string, now time.Time) bool {
	cutoff := now.Add(-dedupeWindow)
	kept := ik.st.Seen[:0]
	found := false
	for _, e := range ik.st.Seen {
		if !e.At.After(cutoff) {
			continue
		}
		if e.ID == id {
			found = true
			continue
		}
		kept = append(kept, e)
	}
	kept = append(kept, SeenMessage{ID: id, At: now})
	if over := len(kept) - seenCapacity; over > 0 {
		kept = kept[over:]
	}
	ik.st.Seen = kept
	return found
}

func (ik *intake) bufferMessage(in pipeline.Inbound, key pipeline.BufferKey, window time.Duration) {
	b := ik.buffer(key)
	if b == nil {
		ik.st.BufferSeq++
		ik.st.Buffers = append(ik.st.Buffers, Buffer{Key: key, Gen: ik.st.BufferSeq})
		b = &ik.st.Buffers[len(ik.st.Buffers)-1]
		ik.armFlush(key, b.Gen)
	}
	b.Messages = append(b.Messages, in)
	b.FlushAt = workflow.Now(ik.ctx).Add(window)
	if len(b.Messages) >= maxBufferedMessages {
		ik.flushBuffer(key)
	}
}

func (ik *intake) buffer(key pipeline.BufferKey) *Buffer {
	for i := range ik.st.Buffers {
		if ik.st.Buffers[i].Key == key {
			return &ik.st.Buffers[i]
		}
	}
	return nil
}

// armFlush flushes the buffer of key when its window has passed. A message
// that re-arms the window only moves FlushAt; this timer then sleeps the
// remainder, so a burst costs one timer per window, not one per message.
func (ik *intake) armFlush(key pipeline.BufferKey, gen int) {
	workflow.Go(ik.ctx, func(ctx workflow.Context) {
		for {
			b := ik.buffer(key)
			if b == nil || b.Gen != gen {
				return
			}
			wait := b.FlushAt.Sub(workflow.Now(ctx))
			if wait <= 0 {
				ik.flushBuffer(key)
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
func (ik *intake) flushBuffer(key pipeline.BufferKey) {
	for i, b := range ik.st.Buffers {
		if b.Key == key {
			ik.st.Buffers = append(ik.st.Buffers[:i:i], ik.st.Buffers[i+1:]...)
			ik.dispatch(Batch{Messages: b.Messages, Queue: ik.queueSettings()})
			return
		}
	}
}

// buffering is true while a debounce window is open.
func (ik *intake) buffering() bool { return len(ik.st.Buffers) > 0 }

// takeBuffers empties every debounce window (a /stop) and returns what
// they held.
func (ik *intake) takeBuffers() []Buffer {
	buffers := ik.st.Buffers
	ik.st.Buffers = nil
	return buffers
}

// resume re-arms the debounce windows a previous run left open.
func (ik *intake) resume() {
	for _, b := range ik.st.Buffers {
		ik.armFlush(b.Key, b.Gen)
	}
}

// queueSettings are the session's queue settings: its /queue override over
// the channel's defaults.
func (ik *intake) queueSettings() pipeline.QueueSettings {
	return ik.st.QueueOverride.Apply(ik.settings.Queue)
}

// resetQueue drops the chat's /queue override.
func (ik *intake) resetQueue() { ik.st.QueueOverride = nil }

// patchQueue merges a /queue command into the chat's override.
func (ik *intake) patchQueue(p *pipeline.QueuePatch) {
	ik.st.QueueOverride = ik.st.QueueOverride.Merge(p)
}
