package workflows

import (
	"github.com/replyflow/replyflow/pipeline"
)

// maxOverflowLines bounds the summaries kept for one turn's prompt.
const maxOverflowLines = 50

// dispatch hands a flushed batch to the running turn or the queue,
// according to its queue mode.
func (tr *turns) dispatch(b Batch) {
	tr.touch()
	a := tr.st.Active
	if a == nil {
		tr.enqueue(b)
		return
	}
	steerable := a.Phase == PhaseModel && !a.Interrupted && b.Last().ThreadID == a.threadID()
	switch b.Queue.Mode {
	case pipeline.QueueSteer:
		if steerable {
			a.Steered = append(a.Steered, b.Messages...)
			tr.counters.Steered += len(b.Messages)
			return
		}
	case pipeline.QueueSteerBacklog:
		if steerable {
			a.SteeredBacklog = append(a.SteeredBacklog, b.Messages...)
			tr.counters.Steered += len(b.Messages)
		}
	case pipeline.QueueInterrupt:
		if a.Phase == PhaseModel && !a.Interrupted {
			tr.interrupt(a)
			tr.st.Queue = append([]Batch{b}, tr.st.Queue...)
			return
		}
	}
	tr.enqueue(b)
}

// enqueue adds a batch to the queue, applying the cap and drop policy.
func (tr *turns) enqueue(b Batch) {
	if limit := max(b.Queue.Cap, 1); len(tr.st.Queue) >= limit {
		switch b.Queue.Drop {
		case pipeline.DropNew:
			tr.drop(b, "the queue is at its cap")
			return
		case pipeline.DropSummarize:
			tr.summarize(tr.st.Queue[0])
		default:
			tr.drop(tr.st.Queue[0], "the queue is at its cap")
		}
		tr.st.Queue = tr.st.Queue[1:]
	}
	b.Queued = b.Queued || tr.st.Active != nil
	tr.st.Queue = append(tr.st.Queue, b)
}

// drop gives up on a batch: its reactions are cleared, since it will get
// no answer.
func (tr *turns) drop(b Batch, why string) {
	tr.counters.Dropped += len(b.Messages)
	for _, m := range b.Messages {
		tr.log.Info("Queued message dropped", "why", why, "message_id", m.MessageID)
	}
	tr.reactions.react(refsOf(b.Messages...), pipeline.ReactionNone)
}

// summarize drops a batch but keeps a line of each message for the next
// turn's prompt; the messages' reactions follow that turn.
func (tr *turns) summarize(b Batch) {
	tr.counters.Dropped += len(b.Messages)
	o := tr.st.Overflow
	if o == nil {
		o = &Overflow{}
		tr.st.Overflow = o
	}
	for _, m := range b.Messages {
		o.Dropped++
		if len(o.Summaries) >= maxOverflowLines {
			tr.reactions.react(refsOf(m), pipeline.ReactionNone)
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

func (tr *turns) takeTurnBatches() []Batch {
	head := tr.st.Queue[0]
	if head.Queue.Mode != pipeline.QueueCollect {
		tr.st.Queue = tr.st.Queue[1:]
		return []Batch{head}
	}
	// Collect never merges across threads (the reply must land in one),
	// nor takes a batch that asked for another mode.
	thread := head.Last().ThreadID
	var taken, kept []Batch
	for _, b := range tr.st.Queue {
		if b.Last().ThreadID == thread && b.Queue.Mode == pipeline.QueueCollect {
			taken = append(taken, b)
		} else {
			kept = append(kept, b)
		}
	}
	tr.st.Queue = kept
	return taken
}

// requeueSteered queues what was steered into a turn but never reached a
// model step, so no message is lost.
func (tr *turns) requeueSteered(a *ActiveTurn) {
	if len(a.Steered) == 0 {
		return
	}
	settings := tr.queueSettings()
	settings.Mode = pipeline.QueueFollowup
	tr.enqueue(Batch{Messages: a.Steered, Queue: settings, Queued: true})
	a.Steered = nil
}

// interrupt cancels the running model step for a newer message.
func (tr *turns) interrupt(a *ActiveTurn) {
	a.Interrupted = true
	tr.counters.Interrupted++
	if tr.cancel != nil {
		tr.cancel()
	}
}

// retry resumes a parked delivery; with nothing parked it changes nothing.
func (tr *turns) retry(r RetryRequest) {
	a := tr.st.Active
	if a == nil || a.Phase != PhaseParked {
		tr.log.Info("Retry ignored: nothing is parked", "by", r.By)
		return
	}
	tr.log.Info("Retrying a parked delivery", "turn_id", a.TurnID, "by", r.By, "reason", r.Reason)
	a.RetryRequested = true
}

// abortActive marks the running turn aborted and cancels its model step
// or tools; it reports whether there was one to stop.
func (tr *turns) abortActive() bool {
	if a := tr.st.Active; a != nil && !a.Aborted {
		a.Aborted = true
		if tr.cancel != nil {
			tr.cancel()
		}
		return true
	}
	return false
}

// dropWaiting drops the queue and what the summarize policy kept; it
// reports whether anything was queued.
func (tr *turns) dropWaiting() bool {
	for _, b := range tr.st.Queue {
		tr.drop(b, "aborted")
	}
	if o := tr.st.Overflow; o != nil {
		for _, id := range o.MessageIDs {
			if ref, ok := tr.reactions.tracked(id); ok {
				tr.reactions.react([]msgRef{ref}, pipeline.ReactionNone)
			}
		}
	}
	queued := len(tr.st.Queue) > 0
	tr.st.Queue, tr.st.Overflow = nil, nil
	return queued
}

// markAborted makes the next turn's text say the previous run was
// aborted.
func (tr *turns) markAborted() {
	tr.counters.Aborted++
	tr.st.AbortedLastRun = true
}
