package retiring

import (
	"slices"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// runCommand answers a command from state, without the model, and out of
// band: a running turn or a full queue does not delay it.
func (s *session) runCommand(in pipeline.Inbound, p pipeline.Parsed) {
	s.counters.Commands++
	if s.runControlCommand(in, p) {
		return
	}
	var text string
	var queueRefusal string
	if p.Command == pipeline.CommandQueue && p.Queue != nil {
		queueRefusal = s.refuseDirectives(in, pipeline.Directives{Queue: p.Queue}, false)
	}
	switch {
	case p.Error != "":
		text = "⚠️ " + p.Error
	case p.Command == pipeline.CommandStop:
		s.abort()
		text = pipeline.AbortedReply
	case p.Command == pipeline.CommandClaim:
		s.replies.claim(in, p.Code)
		return
	case p.Command == pipeline.CommandDecide:
		d := *p.Decision
		d.By = in.Channel + ":" + in.SenderID
		if out, err := s.proposals.decideBy(d, s.v.security && in.SenderIsOwner); err != nil {
			text = "⚠️ " + err.Error()
		} else {
			text = out
		}
	case p.Command == pipeline.CommandActivation && p.Activation == "":
		text = "Activation: " + s.engagement.activation() + ". Owners change it with /activation mention|smart|gated|always."
	case p.Command == pipeline.CommandActivation:
		if !s.isOwner(in) {
			text = "⚠️ Only owners may change the activation mode."
			break
		}
		s.engagement.setActivation(p.Activation)
		text = "Activation for this chat: " + p.Activation + "."
	case p.Command == pipeline.CommandNew:
		s.turns.requestNewTranscript()
		text = pipeline.NewTranscriptReply
	case p.Command == pipeline.CommandModel && p.ModelReset:
		s.turns.setModel("")
		text = "Model back to the default chain: " + strings.Join(s.settings.Models, " → ") + "."
	case p.Command == pipeline.CommandModel && p.Model != "" && s.v.security && !s.isOwner(in) && !s.modelOpen(p.Model):
		text = "⚠️ /model may choose only " + strings.Join(s.openModels(), ", ") + " here; owners may choose any model."
	case p.Command == pipeline.CommandModel && p.Model != "":
		s.turns.setModel(p.Model)
		text = "Model for this chat: " + p.Model + " (no fallback while it is chosen; /model default undoes it)."
	case p.Command == pipeline.CommandModel:
		text = "Model: " + s.turns.primaryModel() + ". Chain: " + strings.Join(s.settings.Models, " → ") + ". Change it with /model provider/model."
	case p.Command == pipeline.CommandStatus:
		text = pipeline.RenderStatus(s.visibility.statusInfo())
	case p.Command == pipeline.CommandQueue && p.QueueReset:
		s.intake.resetQueue()
		text = "Queue settings back to the defaults: " + s.intake.queueSettings().Describe() + "."
	case p.Command == pipeline.CommandQueue && p.Queue != nil && queueRefusal != "":
		text = queueRefusal
	case p.Command == pipeline.CommandQueue && p.Queue != nil:
		s.intake.patchQueue(p.Queue)
		text = "Queue settings for this chat: " + s.intake.queueSettings().Describe() + "."
	default:
		text = "Queue settings: " + s.intake.queueSettings().Describe() + ". Change them with /queue <mode> [debounce:2s] [cap:25] [drop:old|new|summarize]."
	}
	if p.Command == pipeline.CommandModel || p.Command == pipeline.CommandQueue || p.Command == pipeline.CommandActivation {
		s.saveSettings()
	}
	s.replies.answer(in.MessageID, in.ThreadID, text)
}

// saveSettings keeps the chat's settings in its session entry.
func (s *session) saveSettings() {
	saved := pipeline.SessionSettings{ModelOverride: s.st.ModelOverride, Queue: s.st.QueueOverride, Activation: s.st.ActivationOverride}
	if s.v.control {
		saved = s.control.saved(saved)
	}
	s.replies.save(saved)
}

// pressButton applies a button press; a refusal is told to the presser
// under the proposal message (to them alone where the platform can), and
// a double click is one decision.
func (s *session) pressButton(in pipeline.Inbound) {
	decision, id, ok := pipeline.ParseAction(in.Action)
	if !ok {
		s.log.Warn("Unknown button action ignored", "action", in.Action)
		return
	}
	_, err := s.proposals.decideBy(pipeline.Decision{ID: id, Decision: decision, By: in.Channel + ":" + in.SenderID}, s.v.security && in.SenderIsOwner)
	if err == nil {
		return
	}
	if s.v.slack {
		s.replies.privateNotice(nonEmpty(in.ReplyTo, in.MessageID), in.ThreadID, in.SenderID, in.ReplyToken, "⚠️ "+err.Error())
		return
	}
	s.replies.notice(nonEmpty(in.ReplyTo, in.MessageID), in.ThreadID, "⚠️ "+err.Error())
}

// abort stops the running turn (its model step is cancelled, no further
// chunk is sent, a parked delivery is given up) and drops everything
// waiting, so the next message starts afresh.
func (s *session) abort() {
	stopped := s.turns.abortActive()
	buffered := s.intake.takeBuffers()
	for _, b := range buffered {
		s.turns.drop(Batch{Messages: b.Messages}, "aborted")
	}
	stopped = s.turns.dropWaiting() || stopped || len(buffered) > 0
	if stopped {
		s.turns.markAborted()
	}
	s.attrsDirty = true
}

// openModels are the models anyone may pick with /model: the chain and
// REPLYFLOW_MODEL_ALLOW, in that order, without repeats. Every other
// model is for owners, so a stranger cannot switch a chat to a costlier
// model than the operator chose.
func (s *session) openModels() []string {
	var open []string
	for _, m := range append(slices.Clone(s.settings.Models), s.settings.ModelAllow...) {
		if !slices.Contains(open, m) {
			open = append(open, m)
		}
	}
	return open
}

func (s *session) modelOpen(model string) bool { return slices.Contains(s.openModels(), model) }
