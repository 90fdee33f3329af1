package retiring

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
	parsed := s.parse(in.Text)
	if s.v.control {
		s.control.touched()
	}
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
	if refusal := s.refuseDirectives(in, parsed.Directives, true); refusal != "" {
		s.intake.flushBuffer(key)
		s.replies.answer(in.MessageID, in.ThreadID, refusal)
		return
	}
	s.reactions.react(refsOf(in), pipeline.ReactionReceived)
	in.Text = parsed.Text
	settings := parsed.Queue.Apply(s.intake.queueSettings())
	if parsed.IsDirective() || len(in.Media) > 0 || settings.Debounce <= 0 {
		// Commands, directives and media skip the window, after what
		// was pending for their key, so the order holds.
		s.intake.flushBuffer(key)
		b := Batch{Messages: []pipeline.Inbound{in}, Queue: settings}
		if parsed.Directives.Any() {
			b.Directives = &parsed.Directives
		}
		s.turns.dispatch(b)
		return
	}
	s.intake.bufferMessage(in, key, settings.Debounce.D())
}

// parse reads a message as this run does: with ParseMessageV2 and the
// configured reset words from changeControl on (the words come from the
// settings recorded in history, so a replay reads the same), else with
// the frozen ParseMessage.
func (s *session) parse(text string) pipeline.Parsed {
	if s.v.control {
		return pipeline.ParseMessageV2(text, pipeline.ParseOptions{ResetWords: s.settings.ResetWords})
	}
	return pipeline.ParseMessage(text)
}

// refuseDirectives is the answer to a message whose directives its
// sender may not give ("" when it may run): for someone who is not an
// owner, a /model outside the open models, or a setting raised that only
// owners raise (changeMembers). inline: the directives came inside a
// message for a turn, which is not sent either.
func (s *session) refuseDirectives(in pipeline.Inbound, d pipeline.Directives, inline bool) string {
	if d.Model != nil && s.v.security && !s.isOwner(in) && !s.modelOpen(*d.Model) {
		return "⚠️ /model may choose only " + strings.Join(s.openModels(), ", ") + " here; owners may choose any model. Nothing was sent to the model."
	}
	if !s.v.members || s.isOwner(in) {
		return ""
	}
	closed := d.OwnersOnly(s.settings.MemberSettings)
	if len(closed) == 0 {
		return ""
	}
	if inline {
		return pipeline.RefuseOwnersOnly(closed) + " Your message was not sent to the model: send it again without them."
	}
	return pipeline.RefuseOwnersOnly(closed)
}

func refsOf(msgs ...pipeline.Inbound) []msgRef {
	refs := make([]msgRef, len(msgs))
	for i, m := range msgs {
		refs[i] = msgRef{ID: m.MessageID, Thread: m.ThreadID}
	}
	return refs
}
