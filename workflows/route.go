package workflows

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// accept routes a new message between the parts: dedupe, claim,
// permission and engagement, commands and directives, the debounce window.
// It is wiring: each step is a part's, and accept only decides which part
// sees the message next.
func (s *session) accept(in pipeline.Inbound) {
	now := workflow.Now(s.ctx)
	if !s.intake.admit(in.MessageID, now) {
		return
	}
	if pipeline.IsClaimCode(strings.TrimSpace(in.Text)) {
		// Before the permission gate: claiming is how an owner gets in.
		s.replies.claim(in, strings.TrimSpace(in.Text))
		return
	}
	if !s.engagement.permitted(in) {
		s.engagement.deny(in)
		return
	}
	s.engagement.seeParticipant(in, now)
	if in.Action != "" {
		s.pressButton(in)
		return
	}
	parsed := pipeline.ParseMessage(in.Text)
	key := pipeline.BufferKeyOf(in)
	if parsed.Command != "" {
		// No 👀: the answer comes at once and ✅ would replace it
		// within the coalescing window.
		s.intake.flushBuffer(key)
		s.runCommand(in, parsed)
		return
	}
	switch s.engagement.engage(in, now).Decision {
	case pipeline.DecisionGate:
		s.engagement.gateMessage(in, now)
		return
	case pipeline.DecisionObserve:
		s.engagement.observe(in, now)
		return
	}
	if s.engagement.gatePending() {
		s.engagement.dropGateBuffer(now)
	}
	s.reactions.react(refsOf(in), pipeline.ReactionReceived)
	in.Text = parsed.Text
	settings := parsed.Queue.Apply(s.intake.queueSettings())
	if parsed.IsDirective() || len(in.Media) > 0 || settings.Debounce <= 0 {
		// Commands, directives and media skip the window, after what
		// was pending for their key, so the order holds.
		s.intake.flushBuffer(key)
		s.turns.dispatch(Batch{Messages: []pipeline.Inbound{in}, Queue: settings})
		return
	}
	s.intake.bufferMessage(in, key, settings.Debounce.D())
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
