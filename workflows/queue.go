package workflows

import (
	"github.com/replyflow/replyflow/pipeline"
)

// maxOverflowLines bounds the summaries kept for one turn's prompt.
const maxOverflowLines = 50

// dispatch hands a flushed batch to the running turn or the queue,
// according to its queue mode.
func (s *session) dispatch(b Batch) {
	s.touch()
	a := s.st.Active
	if a == nil {
		s.enqueue(b)
		return
	}
	steerable := a.Phase == PhaseModel && !a.Interrupted && b.Last().ThreadID == a.threadID()
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
			return
		}
	}
	s.enqueue(b)
}

// enqueue adds a batch to the queue, applying the cap and drop policy.
func (s *session) enqueue(b Batch) {
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

// drop gives up on a batch: its reactions are cleared, since it will get
// no answer.
func (s *session) drop(b Batch, why string) {
	s.st.Counters.Dropped += len(b.Messages)
	for _, m := range b.Messages {
		s.log.Info("Queued message dropped", "why", why, "message_id", m.MessageID)
	}
	s.reactions.react(refsOf(b.Messages...), pipeline.ReactionNone)
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
