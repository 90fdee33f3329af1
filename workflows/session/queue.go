package session

import (
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// Queue's bounds. With the cap in batches (a setting, at most
// pipeline.MaxQueueCap) they bound what the queue part carries through
// continue-as-new. Nothing past a bound is lost silently: a dropped
// message is counted, logged and its reaction cleared.
const (
	// maxQueuedBytes bounds the messages waiting in the queue, whatever
	// its cap in batches: past it the drop policy applies to the oldest.
	// Bytes are those the messages take in State (pipeline.Inbound.Size).
	maxQueuedBytes = 128 << 10
	// maxSteered and maxSteeredBytes bound the messages steered into a
	// running turn that its next step has not taken yet; a batch that
	// would pass them is queued instead.
	maxSteered      = 50
	maxSteeredBytes = 64 << 10
	// maxOverflowLines bounds the summary lines the summarize policy
	// keeps for the next turn's prompt; a message summarized past it is
	// only counted, and its reaction cleared.
	maxOverflowLines = 50
)

// QueueState is the queue part: the batches waiting for a turn, what the
// summarize policy kept of dropped ones, and what the next turn is told
// besides its messages.
type QueueState struct {
	// Queue holds the batches waiting for a turn, oldest first.
	Queue []Batch `json:"queue,omitempty"`
	// Overflow is what the summarize policy kept of dropped batches.
	Overflow *Overflow `json:"overflow,omitempty"`
	// AbortedLastRun makes the next turn's text say the previous run was
	// stopped.
	AbortedLastRun bool `json:"aborted_last_run,omitempty"`
	// NewTranscript makes the next turn start a fresh transcript.
	NewTranscript bool `json:"new_transcript,omitempty"`
	// Counters, for the state query and metrics.
	Dropped     int `json:"dropped,omitempty"`
	Steered     int `json:"steered,omitempty"`
	Interrupted int `json:"interrupted,omitempty"`
	Aborted     int `json:"aborted,omitempty"`
}

// Overflow is what the summarize policy kept of dropped batches: a line
// per message (at most maxOverflowLines) and their messages, whose
// reactions follow the next turn.
type Overflow struct {
	Dropped   int      `json:"dropped"`
	Summaries []string `json:"summaries"`
	Refs      []msgRef `json:"refs"`
}

// RunningTurn is what the queue reads of the running turn, which it
// never holds: the loop builds it from the turn part. The zero value is
// no turn running.
type RunningTurn struct {
	TurnID string
	// AtModel: the turn is in its model steps (asking a model or running
	// its tools), where a steered message reaches its next step and an
	// interrupt cancels it.
	AtModel bool
	// Thread is the thread the turn answers in.
	Thread      string
	Interrupted bool
	Aborted     bool
	// Steered and SteeredBytes are the messages steered into the turn
	// (backlog too) that its next step has not taken yet.
	Steered      int
	SteeredBytes int
}

func (t RunningTurn) running() bool { return t.TurnID != "" }

// steerable reports whether b may join the turn at its next step: a
// stopped turn takes nothing more (what arrives after a /stop gets a turn
// of its own), a reply lands in one thread, and the steered messages stay
// within their bounds.
func (t RunningTurn) steerable(b Batch) bool {
	return t.AtModel && !t.Interrupted && !t.Aborted && b.Last().ThreadID == t.Thread &&
		t.Steered+len(b.Messages) <= maxSteered && t.SteeredBytes+sizeOf(b.Messages) <= maxSteeredBytes
}

// Steered: the queue gave a batch's messages to the running turn, for its
// next model step. Backlog: the batch is queued as well, so the turn
// does not queue them again when no step takes them.
type Steered struct {
	TurnID   string
	Messages []pipeline.Inbound
	Backlog  bool
}

// Interrupt: a newer batch, now first in the queue, stops the running
// turn.
type Interrupt struct{ TurnID string }

func (Steered) isEvent()   {}
func (Interrupt) isEvent() {}

// Dispatch answers BatchReady: with no turn running the batch is queued;
// otherwise its mode decides. Steer gives it to the turn's next step,
// steer-backlog does that and queues it too, interrupt stops the turn and
// puts it first; a batch the turn cannot take is queued as a follow-up.
func (s *QueueState) Dispatch(env Env, b Batch, turn RunningTurn) []Effect {
	if !turn.running() {
		return s.enqueue(env, b)
	}
	var out []Effect
	switch b.Queue.Mode {
	case pipeline.QueueSteer:
		if turn.steerable(b) {
			s.Steered += len(b.Messages)
			return []Effect{Emit{Steered{TurnID: turn.TurnID, Messages: b.Messages}}}
		}
	case pipeline.QueueSteerBacklog:
		if turn.steerable(b) {
			s.Steered += len(b.Messages)
			out = append(out, Emit{Steered{TurnID: turn.TurnID, Messages: b.Messages, Backlog: true}})
		}
	case pipeline.QueueInterrupt:
		if turn.AtModel && !turn.Interrupted {
			return s.interrupt(env, b, turn.TurnID)
		}
	}
	b.Queued = true
	return append(out, s.enqueue(env, b)...)
}

// enqueue adds a batch to the queue; past its cap in batches or the byte
// bound, the drop policy decides what goes: the newest batch (new), or
// the oldest, dropped (old) or kept as a summary line (summarize).
func (s *QueueState) enqueue(env Env, b Batch) []Effect {
	s.Queue = append(s.Queue, b)
	var cleared []msgRef
	for s.overBounds(b.Queue.Cap) {
		if b.Queue.Drop == pipeline.DropNew {
			// Only the newcomer goes: what waits keeps its place even
			// past a cap lowered since it came.
			cleared = append(cleared, s.dropAt(env, len(s.Queue)-1, b.Queue.Drop)...)
			break
		}
		cleared = append(cleared, s.dropAt(env, 0, b.Queue.Drop)...)
	}
	return append(clearReactions(cleared), Publish{})
}

// interrupt puts b first and asks the turn to stop for it. The cap and
// the byte bound take from the oldest batches behind it.
func (s *QueueState) interrupt(env Env, b Batch, turnID string) []Effect {
	s.Interrupted++
	s.Queue = append([]Batch{b}, s.Queue...)
	var cleared []msgRef
	for s.overBounds(b.Queue.Cap) {
		cleared = append(cleared, s.dropAt(env, 1, b.Queue.Drop)...)
	}
	out := []Effect{Emit{Interrupt{TurnID: turnID}}}
	return append(append(out, clearReactions(cleared)...), Publish{})
}

// overBounds reports whether the queue is past its cap in batches or its
// byte bound; a lone batch is always kept, whatever its size or the cap.
func (s *QueueState) overBounds(capBatches int) bool {
	return len(s.Queue) > 1 && (len(s.Queue) > capBatches || queuedBytes(s.Queue) > maxQueuedBytes)
}

// dropAt takes batch i off the queue under the drop policy; it returns
// the messages whose reactions are to be cleared.
func (s *QueueState) dropAt(env Env, i int, policy pipeline.DropPolicy) []msgRef {
	b := s.Queue[i]
	s.Queue = append(s.Queue[:i:i], s.Queue[i+1:]...)
	if policy == pipeline.DropSummarize {
		return s.summarize(b)
	}
	return s.drop(env, b.Messages, "the queue is at its cap")
}

// drop gives up on messages: they will get no answer, so their reactions
// are to be cleared.
func (s *QueueState) drop(env Env, msgs []pipeline.Inbound, why string) []msgRef {
	s.Dropped += len(msgs)
	for _, m := range msgs {
		env.logger().Info("Queued message dropped", "why", why, "message_id", m.MessageID)
	}
	return refsOf(msgs...)
}

// summarize drops a batch but keeps a line of each message for the next
// turn's prompt; those messages' reactions follow that turn. It returns
// the messages past maxOverflowLines, whose reactions are to be cleared.
func (s *QueueState) summarize(b Batch) []msgRef {
	s.Dropped += len(b.Messages)
	if s.Overflow == nil {
		s.Overflow = &Overflow{}
	}
	o := s.Overflow
	var cleared []msgRef
	for _, m := range b.Messages {
		o.Dropped++
		if len(o.Summaries) >= maxOverflowLines {
			cleared = append(cleared, refsOf(m)...)
			continue
		}
		name := m.SenderName
		if name == "" {
			name = m.SenderID
		}
		o.Summaries = append(o.Summaries, pipeline.SummaryLine(name, m.Text))
		o.Refs = append(o.Refs, refsOf(m)...)
	}
	return cleared
}

// clearReactions asks the reactions part to clear refs, if any.
func clearReactions(refs []msgRef) []Effect {
	if len(refs) == 0 {
		return nil
	}
	return []Effect{Emit{ReactionsWanted{Refs: refs, State: pipeline.ReactionNone}}}
}

// NextTurn is what the queue gives the turn it starts.
type NextTurn struct {
	Messages []pipeline.Inbound
	// Text is the batches' text: one batch's messages, or in collect
	// mode every queued batch under its heading. The engagement part
	// dresses it; Prompt puts the Preface before the result.
	Text string
	// Preface is what the queue tells the model before the text: the
	// summaries of dropped messages, a stopped previous run.
	Preface    string
	Directives *pipeline.Directives
	NoAnchor   bool
	// NewTranscript: a fresh transcript was asked for (/new).
	NewTranscript bool
	// OverflowRefs are the summarized messages, whose reactions follow
	// the turn with its own messages'.
	OverflowRefs []msgRef
}

// Prompt is the turn's text: the preface, then the dressed text.
func (t NextTurn) Prompt(dressed string) string {
	if t.Preface == "" {
		return dressed
	}
	return t.Preface + "\n\n" + dressed
}

// Next takes the next turn's batches off the queue (in collect mode,
// every collect batch queued for the first one's thread) with what the
// queue kept for that turn; false when nothing waits. The loop calls it
// only while no turn runs.
func (s *QueueState) Next(env Env) (NextTurn, bool) {
	if len(s.Queue) == 0 {
		return NextTurn{}, false
	}
	batches := s.takeTurnBatches()
	t := NextTurn{Directives: mergedDirectives(batches), NoAnchor: batches[0].NoAnchor, NewTranscript: s.TakeNewTranscript()}
	texts := make([]string, len(batches))
	for i, b := range batches {
		t.Messages = append(t.Messages, b.Messages...)
		texts[i] = batchText(b)
	}
	t.Text = texts[0]
	if batches[0].Queue.Mode == pipeline.QueueCollect && batches[0].Queued {
		t.Text = pipeline.RenderCollected(texts)
	}
	var preface []string
	if o := s.Overflow; o != nil {
		preface = append(preface, pipeline.RenderOverflow(o.Dropped, o.Summaries))
		t.OverflowRefs = o.Refs
		s.Overflow = nil
	}
	if s.AbortedLastRun {
		preface = append(preface, pipeline.AbortedNotice)
		s.AbortedLastRun = false
	}
	t.Preface = strings.Join(preface, "\n\n")
	env.logger().Debug("Next turn taken off the queue", "batches", len(batches), "messages", len(t.Messages), "still_queued", len(s.Queue))
	return t, true
}

// takeTurnBatches takes the head batch off the queue, and in collect mode
// every other collect batch of its thread: collect never merges across
// threads (the reply lands in one), nor takes a batch that asked for
// another mode.
func (s *QueueState) takeTurnBatches() []Batch {
	head := s.Queue[0]
	if head.Queue.Mode != pipeline.QueueCollect {
		s.Queue = s.Queue[1:]
		return []Batch{head}
	}
	thread := head.Last().ThreadID
	var taken, kept []Batch
	for _, b := range s.Queue {
		if b.Last().ThreadID == thread && b.Queue.Mode == pipeline.QueueCollect {
			taken = append(taken, b)
		} else {
			kept = append(kept, b)
		}
	}
	s.Queue = kept
	return taken
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

// batchText is a batch's messages as one turn text.
func batchText(b Batch) string {
	texts := make([]string, len(b.Messages))
	for i, m := range b.Messages {
		texts[i] = m.TextWithMedia()
	}
	return pipeline.JoinTexts(texts)
}

// Requeue queues, as a follow-up, what was steered into a turn that no
// model step took, so no message is lost; settings are the chat's queue
// settings now.
func (s *QueueState) Requeue(env Env, steered []pipeline.Inbound, settings pipeline.QueueSettings) []Effect {
	if len(steered) == 0 {
		return nil
	}
	settings.Mode = pipeline.QueueFollowup
	return s.enqueue(env, Batch{Messages: steered, Queue: settings, Queued: true})
}

// Abort is the queue's side of a stop command: everything that waited is
// dropped, its reactions cleared. That is the queue, what summarize
// kept, and unsent: the messages waiting elsewhere (open debounce
// windows, steered into the stopped turn but taken by no step). When
// anything was stopped (turnStopped: a turn was running), the next turn
// is told the previous run was stopped.
func (s *QueueState) Abort(env Env, turnStopped bool, unsent []pipeline.Inbound) []Effect {
	cleared := s.drop(env, unsent, "aborted")
	for _, b := range s.Queue {
		cleared = append(cleared, s.drop(env, b.Messages, "aborted")...)
	}
	if o := s.Overflow; o != nil {
		cleared = append(cleared, o.Refs...)
	}
	stopped := turnStopped || len(unsent) > 0 || len(s.Queue) > 0
	s.Queue, s.Overflow = nil, nil
	if stopped {
		s.Aborted++
		s.AbortedLastRun = true
	}
	return append(clearReactions(cleared), Publish{})
}

// AskNewTranscript makes the next turn start a fresh transcript (/new).
func (s *QueueState) AskNewTranscript() { s.NewTranscript = true }

// TakeNewTranscript reports whether a fresh transcript was asked for, and
// forgets it: the next turn, queued or a heartbeat's, starts it.
func (s *QueueState) TakeNewTranscript() bool {
	asked := s.NewTranscript
	s.NewTranscript = false
	return asked
}

// Queued is true while a batch waits for a turn.
func (s *QueueState) Queued() bool { return len(s.Queue) > 0 }

// Ready is true when a batch waits and no turn runs: the loop starts one.
func (s *QueueState) Ready(turn RunningTurn) bool { return !turn.running() && s.Queued() }

func queuedBytes(queue []Batch) int {
	n := 0
	for _, b := range queue {
		n += sizeOf(b.Messages)
	}
	return n
}
