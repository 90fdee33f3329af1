package retiring

import (
	"github.com/replyflow/replyflow/pipeline"
)

// maxOverflowLines bounds the summaries kept for one turn's prompt.
const maxOverflowLines = 50

// dispatch hands a flushed batch to the running turn or the queue,
// according to its queue mode.
func (s *turns) dispatch(b Batch) {
	s.attrsDirty = true
	a := s.st.Active
	if a == nil {
		s.enqueue(b)
		return
	}
	// A stopped turn takes nothing more: what arrives after a /stop is
	// answered by a turn of its own.
	steerable := a.Phase == PhaseModel && !a.Interrupted && !(s.v.promises && a.Aborted) && b.Last().ThreadID == threadOf(a) &&
		(!s.v.hardened || (len(a.Steered)+len(a.SteeredBacklog)+len(b.Messages) <= maxSteered &&
			sizeOf(a.Steered)+sizeOf(a.SteeredBacklog)+sizeOf(b.Messages) <= maxSteeredBytes))
	switch b.Queue.Mode {
	case pipeline.QueueSteer:
		if steerable {
			a.Steered = append(a.Steered, b.Messages...)
			s.counters.Steered += len(b.Messages)
			return
		}
	case pipeline.QueueSteerBacklog:
		if steerable {
			a.SteeredBacklog = append(a.SteeredBacklog, b.Messages...)
			s.counters.Steered += len(b.Messages)
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
func (s *turns) enqueue(b Batch) {
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
func (s *turns) enqueueBounded(b Batch) {
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
func (s *turns) dropQueued(i int, policy pipeline.DropPolicy) {
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
func (s *turns) drop(b Batch, why string) {
	s.counters.Dropped += len(b.Messages)
	for _, m := range b.Messages {
		s.log.Info("Queued message dropped", "why", why, "message_id", m.MessageID)
	}
	s.reactions.react(refsOf(b.Messages...), pipeline.ReactionNone)
}

// summarize drops a batch but keeps a line of each message for the next
// turn's prompt; the messages' reactions follow that turn.
func (s *turns) summarize(b Batch) {
	s.counters.Dropped += len(b.Messages)
	o := s.st.Overflow
	if o == nil {
		o = &Overflow{}
		s.st.Overflow = o
	}
	for _, m := range b.Messages {
		o.Dropped++
		if len(o.Summaries) >= maxOverflowLines {
			s.reactions.react(refsOf(m), pipeline.ReactionNone)
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

func (s *turns) takeTurnBatches() []Batch {
	head := s.st.Queue[0]
	if head.Queue.Mode != pipeline.QueueCollect {
		s.st.Queue = s.st.Queue[1:]
		return []Batch{head}
	}
	// Collect never merges across threads (the reply must land in one),
	// nor takes a batch that asked for another mode.
	thread := head.Last().ThreadID
	var taken, kept []Batch
	for _, b := range s.st.Queue {
		if b.Last().ThreadID == thread && b.Queue.Mode == pipeline.QueueCollect {
			taken = append(taken, b)
		} else {
			kept = append(kept, b)
		}
	}
	s.st.Queue = kept
	return taken
}

// requeueSteered queues what was steered into a turn but never reached a
// model step, so no message is lost.
func (s *turns) requeueSteered(a *ActiveTurn) {
	if len(a.Steered) == 0 {
		return
	}
	settings := s.queueSettings()
	settings.Mode = pipeline.QueueFollowup
	s.enqueue(Batch{Messages: a.Steered, Queue: settings, Queued: true})
	a.Steered = nil
}

// endStopped closes a stopped turn: its messages' reactions are cleared at
// once.
func (s *turns) endStopped(a *ActiveTurn, rec *TurnRecord, refs []msgRef) {
	rec.Outcome = stopOutcome(a)
	s.reactions.clearStopped(refs)
}

// interrupt cancels the running model step for a newer message.
func (s *turns) interrupt(a *ActiveTurn) {
	a.Interrupted = true
	s.counters.Interrupted++
	if s.cancelTurn != nil {
		s.cancelTurn()
	}
}

// retry resumes a parked delivery; with nothing parked it changes nothing.
func (s *turns) retry(r RetryRequest) {
	a := s.st.Active
	if a == nil || a.Phase != PhaseParked {
		s.log.Info("Retry ignored: nothing is parked", "by", r.By)
		return
	}
	s.log.Info("Retrying a parked delivery", "turn_id", a.TurnID, "by", r.By, "reason", r.Reason)
	a.RetryRequested = true
}

// abortActive marks the running turn aborted and cancels its model step
// or tools; it reports whether there was one to stop.
func (s *turns) abortActive() bool {
	if a := s.st.Active; a != nil && !a.Aborted {
		a.Aborted = true
		if s.v.promises && len(a.Steered) > 0 {
			// Steered messages not yet given to the model waited like
			// queued ones, and /stop drops everything that waited.
			s.drop(Batch{Messages: a.Steered}, "aborted")
			a.Steered = nil
		}
		if s.cancelTurn != nil {
			s.cancelTurn()
		}
		return true
	}
	return false
}

// dropWaiting drops the queue and what the summarize policy kept; it
// reports whether anything was queued.
func (s *turns) dropWaiting() bool {
	for _, b := range s.st.Queue {
		s.drop(b, "aborted")
	}
	if o := s.st.Overflow; o != nil {
		for _, id := range o.MessageIDs {
			if ref, ok := s.reactions.tracked(id); ok {
				s.reactions.react([]msgRef{ref}, pipeline.ReactionNone)
			}
		}
	}
	queued := len(s.st.Queue) > 0
	s.st.Queue, s.st.Overflow = nil, nil
	return queued
}

// markAborted makes the next turn's text say the previous run was
// aborted.
func (s *turns) markAborted() {
	s.counters.Aborted++
	s.st.AbortedLastRun = true
}
