package retiring

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Bounds on the collections of State that grow with what users send, so a
// busy or hostile chat can neither hold a batch back forever nor carry an
// ever larger state through continue-as-new (each run's input is one
// payload, and payloads have a size limit). Every bound says what happens
// past it; nothing past a bound is lost silently: a message either goes on
// early (a flush) or is dropped with its reaction cleared and a log line.
// TestLargestStateFitsInOnePayload adds the bounds up.
const (
	// defaultDebounceMaxWait is the longest a debounce window or a gated
	// batch waits after its first message when the settings give none.
	defaultDebounceMaxWait = 5 * time.Second
	// maxBufferedMessages and maxBufferedBytes flush a debounce window
	// (or ask the gate) early, so a sender who never pauses still gets
	// answers and one window stays small. Bytes are those the messages
	// take in State (pipeline.Inbound.Size), text and IDs alike.
	maxBufferedMessages = 50
	maxBufferedBytes    = 32 << 10
	// maxOpenBuffers bounds the debounce windows open at once (one per
	// sender and thread); a new one flushes the oldest first.
	maxOpenBuffers = 8
	// maxQueuedBytes bounds the text waiting in the queue, whatever its
	// cap in batches: past it the drop policy applies to the oldest.
	maxQueuedBytes = 128 << 10
	// maxSteered bounds the messages steered into one running turn; more
	// are queued as follow-ups.
	maxSteered      = 50
	maxSteeredBytes = 64 << 10
	// maxReactions bounds the user messages whose reaction the session
	// tracks (each until its clear, a minute or so); a message past it
	// gets no reaction at all, since one shown must also be cleared.
	maxReactions = 200
	// maxPendingReplies bounds the direct answers (commands, notices)
	// being delivered at once; past it a command still takes effect but
	// its answer is not sent, and the log says so.
	maxPendingReplies = 20
	// maxObservedBytes bounds the text kept of one observed message.
	maxObservedBytes = 4 << 10
	// queueAllowance is how long an activity may wait for a worker on
	// top of its own run time before it counts as failed: every activity
	// has a hard budget, queueing included.
	queueAllowance = time.Minute
	// maxSeenIDBytes: longer message IDs are remembered by digest.
	maxSeenIDBytes = 32
)

// flushAt is when a window whose first message came at first and whose
// latest came at now flushes: window after the latest message, but never
// later than the maximum wait after the first (or the window itself, when
// that is longer, so a window is never cut short). Runs before the
// hardening change keep the unbounded window they replay with.
func (s *runEnv) flushAt(first, now time.Time, window time.Duration) time.Time {
	at := now.Add(window)
	if !s.v.hardened {
		return at
	}
	limit := s.settings.DebounceMaxWait.D()
	if limit <= 0 {
		limit = defaultDebounceMaxWait
	}
	if latest := first.Add(max(limit, window)); latest.Before(at) {
		return latest
	}
	return at
}

// overBudget reports whether messages have reached a window's bounds.
func overBudget(msgs []pipeline.Inbound) bool {
	return len(msgs) >= maxBufferedMessages || sizeOf(msgs) >= maxBufferedBytes
}

// sizeOf is about the bytes the messages take in State.
func sizeOf(msgs []pipeline.Inbound) int {
	n := 0
	for _, m := range msgs {
		n += m.Size()
	}
	return n
}

func queuedBytes(queue []Batch) int {
	n := 0
	for _, b := range queue {
		n += sizeOf(b.Messages)
	}
	return n
}

// seenKey is how a message ID is kept in the dedupe window: as it is when
// short, else as a digest, so 5,000 IDs of the longest size allowed stay
// a small part of the state.
func seenKey(id string) string {
	if len(id) <= maxSeenIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// Bounds on what the state carries, so a busy session's state (and so each
// continue-as-new input) stays small.
const (
	seenCapacity   = 5000
	deliveryWindow = 200
)
