package session

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Intake's bounds.
const (
	// dedupeWindow is how long a message ID is remembered: platforms
	// redeliver an event within minutes (the longest retries come after five).
	dedupeWindow = 20 * time.Minute
	// seenCapacity bounds the remembered IDs whatever the window.
	seenCapacity = 5000
	// maxSeenIDBytes: a longer ID is remembered by its hash, so a
	// stranger's huge IDs cannot swell the state.
	maxSeenIDBytes = 32
	// defaultDebounceMaxWait is the longest a window stays open when
	// REPLYFLOW_DEBOUNCE_MAX_WAIT is unset: a sender who never pauses is
	// still answered.
	defaultDebounceMaxWait = 5 * time.Second
	// maxBufferedMessages and maxBufferedBytes close a window early.
	maxBufferedMessages = 50
	maxBufferedBytes    = 32 << 10
	// maxOpenBuffers bounds the windows open at once (one per sender and
	// thread): opening one more closes the oldest.
	maxOpenBuffers = 8
)

// IntakeState is the intake part: the messages already seen (dedupe), the
// open debounce windows, and the chat's /queue override.
type IntakeState struct {
	Seen          []SeenMessage        `json:"seen,omitempty"`
	Buffers       []Buffer             `json:"buffers,omitempty"`
	BufferSeq     int                  `json:"buffer_seq,omitempty"`
	QueueOverride *pipeline.QueuePatch `json:"queue_override,omitempty"`
	LastInboundAt time.Time            `json:"last_inbound_at,omitzero"`
	Inbound       int                  `json:"inbound,omitempty"`
	Duplicates    int                  `json:"duplicates,omitempty"`
}

// SeenMessage is a message ID intake has admitted, and when.
type SeenMessage struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// Buffer is one open debounce window: one sender's messages in one
// thread, flushed as one batch at FlushAt.
type Buffer struct {
	Key      pipeline.BufferKey `json:"key"`
	Messages []pipeline.Inbound `json:"messages"`
	FirstAt  time.Time          `json:"first_at"`
	FlushAt  time.Time          `json:"flush_at"`
	// Gen names the window's timer; a window that closed and opened again
	// has another.
	Gen int `json:"gen"`
}

// Admit answers MessageArrived: a message seen within the dedupe window
// is dropped; any other is accepted.
func (s *IntakeState) Admit(env Env, in pipeline.Inbound) []Effect {
	if s.seen(seenKey(in.MessageID), env.Now) {
		s.Duplicates++
		env.logger().Debug("Duplicate inbound ignored", "message_id", in.MessageID)
		return nil
	}
	s.Inbound++
	s.LastInboundAt = env.Now
	return []Effect{Emit{MessageAccepted{In: in}}}
}

// seen reports whether key was admitted within the window, and
// remembers it now.
func (s *IntakeState) seen(key string, now time.Time) bool {
	cutoff := now.Add(-dedupeWindow)
	kept := s.Seen[:0]
	found := false
	for _, e := range s.Seen {
		if !e.At.After(cutoff) {
			continue
		}
		if e.ID == key {
			found = true
			continue
		}
		kept = append(kept, e)
	}
	kept = append(kept, SeenMessage{ID: key, At: now})
	if over := len(kept) - seenCapacity; over > 0 {
		kept = kept[over:]
	}
	s.Seen = kept
	return found
}

func seenKey(id string) string {
	if len(id) <= maxSeenIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// Hold puts a message in its sender's window, opening one (and its timer)
// if none is open; a window at its bounds closes at once.
func (s *IntakeState) Hold(env Env, in pipeline.Inbound, queue pipeline.QueueSettings) []Effect {
	key := pipeline.BufferKeyOf(in)
	var out []Effect
	b := s.buffer(key)
	if b == nil {
		if len(s.Buffers) >= maxOpenBuffers {
			out = append(out, s.Close(env, s.Buffers[0].Key, queue)...)
		}
		s.BufferSeq++
		s.Buffers = append(s.Buffers, Buffer{Key: key, Gen: s.BufferSeq, FirstAt: env.Now})
		b = &s.Buffers[len(s.Buffers)-1]
	}
	b.Messages = append(b.Messages, in)
	b.FlushAt = flushAt(env, b.FirstAt, queue.Debounce.D())
	if len(b.Messages) >= maxBufferedMessages || sizeOf(b.Messages) >= maxBufferedBytes {
		return append(out, s.Close(env, key, queue)...)
	}
	if len(b.Messages) == 1 {
		out = append(out, s.arm(*b))
	}
	return out
}

// flushAt is when a window that opened at first closes, a message having
// arrived now: a window after the newest message, but never later than
// the maximum wait after the first.
func flushAt(env Env, first time.Time, window time.Duration) time.Time {
	limit := env.Settings.DebounceMaxWait.D()
	if limit <= 0 {
		limit = defaultDebounceMaxWait
	}
	at, latest := env.Now.Add(window), first.Add(max(limit, window))
	if latest.Before(at) {
		return latest
	}
	return at
}

func (s *IntakeState) arm(b Buffer) Effect {
	return Arm{
		Timer:   windowTimer(b.Gen),
		At:      b.FlushAt,
		Summary: fmt.Sprintf("debounce: %d message(s) from %s in thread %s", len(b.Messages), b.Key.Sender, b.Key.Thread),
	}
}

const windowTimerPrefix = "window/"

func windowTimer(gen int) TimerID { return TimerID(windowTimerPrefix + strconv.Itoa(gen)) }

// WindowTimer reports whether t is a debounce window's timer.
func WindowTimer(t TimerID) bool { return strings.HasPrefix(string(t), windowTimerPrefix) }

// Fired answers a window's TimerFired: the window closes, unless a
// message moved its time later, when its timer is armed again for the
// rest.
func (s *IntakeState) Fired(env Env, t TimerID, queue pipeline.QueueSettings) []Effect {
	for _, b := range s.Buffers {
		if windowTimer(b.Gen) != t {
			continue
		}
		if b.FlushAt.After(env.Now) {
			return []Effect{s.arm(b)}
		}
		return s.Close(env, b.Key, queue)
	}
	return nil // the window closed early
}

// Close closes key's window, if one is open: its messages are ready for
// a turn, and its timer is disarmed.
func (s *IntakeState) Close(_ Env, key pipeline.BufferKey, queue pipeline.QueueSettings) []Effect {
	for i, b := range s.Buffers {
		if b.Key != key {
			continue
		}
		s.Buffers = append(s.Buffers[:i:i], s.Buffers[i+1:]...)
		return []Effect{Disarm{Timer: windowTimer(b.Gen)}, Emit{BatchReady{Batch: Batch{Messages: b.Messages, Queue: queue}}}}
	}
	return nil
}

// Resume arms the timers of the windows a previous run carried.
func (s *IntakeState) Resume() []Effect {
	out := make([]Effect, 0, len(s.Buffers))
	for _, b := range s.Buffers {
		out = append(out, s.arm(b))
	}
	return out
}

// DropAll closes every open window without a batch (/stop): it returns
// the messages they held, oldest window first, and disarms their timers.
func (s *IntakeState) DropAll() (dropped []pipeline.Inbound, out []Effect) {
	for _, b := range s.Buffers {
		dropped = append(dropped, b.Messages...)
		out = append(out, Disarm{Timer: windowTimer(b.Gen)})
	}
	s.Buffers = nil
	return dropped, out
}

// Holding is true while a window is open.
func (s *IntakeState) Holding() bool { return len(s.Buffers) > 0 }

// buffer is key's open window, or nil.
func (s *IntakeState) buffer(key pipeline.BufferKey) *Buffer {
	for i := range s.Buffers {
		if s.Buffers[i].Key == key {
			return &s.Buffers[i]
		}
	}
	return nil
}

// QueueSettings are the configured queue settings under the chat's
// /queue override.
func (s *IntakeState) QueueSettings(env Env) pipeline.QueueSettings {
	return s.QueueOverride.Apply(env.Settings.Queue)
}

// PatchQueue applies a /queue command; ResetQueue is /queue default.
func (s *IntakeState) PatchQueue(p *pipeline.QueuePatch) { s.QueueOverride = s.QueueOverride.Merge(p) }
func (s *IntakeState) ResetQueue()                       { s.QueueOverride = nil }

func sizeOf(msgs []pipeline.Inbound) int {
	n := 0
	for _, m := range msgs {
		n += m.Size()
	}
	return n
}
