package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// runCommand answers a command from state, without the model, and out of
// band: a running turn or a full queue does not delay it.
func (s *session) runCommand(in pipeline.Inbound, p pipeline.Parsed) {
	s.st.Counters.Commands++
	var text string
	switch {
	case p.Error != "":
		text = "⚠️ " + p.Error
	case p.Command == pipeline.CommandStop:
		s.abort()
		text = pipeline.AbortedReply
	case p.Command == pipeline.CommandClaim:
		s.claim(in, p.Code)
		return
	case p.Command == pipeline.CommandDecide:
		d := *p.Decision
		d.By = in.Channel + ":" + in.SenderID
		if out, err := s.decide(d); err != nil {
			text = "⚠️ " + err.Error()
		} else {
			text = out
		}
	case p.Command == pipeline.CommandActivation && p.Activation == "":
		text = "Activation: " + s.activation() + ". Owners change it with /activation mention|smart|gated|always."
	case p.Command == pipeline.CommandActivation:
		if !pipeline.Allowed(in.Channel+":"+in.SenderID, s.settings.Owners) {
			text = "⚠️ Only owners may change the activation mode."
			break
		}
		s.st.ActivationOverride = p.Activation
		text = "Activation for this chat: " + p.Activation + "."
	case p.Command == pipeline.CommandNew:
		s.st.NewTranscript = true
		text = pipeline.NewTranscriptReply
	case p.Command == pipeline.CommandModel && p.ModelReset:
		s.st.ModelOverride = ""
		text = "Model back to the default chain: " + strings.Join(s.settings.Models, " → ") + "."
	case p.Command == pipeline.CommandModel && p.Model != "":
		s.st.ModelOverride = p.Model
		text = "Model for this chat: " + p.Model + " (no fallback while it is chosen; /model default undoes it)."
	case p.Command == pipeline.CommandModel:
		text = "Model: " + s.primaryModel() + ". Chain: " + strings.Join(s.settings.Models, " → ") + ". Change it with /model provider/model."
	case p.Command == pipeline.CommandStatus:
		text = pipeline.RenderStatus(s.statusInfo())
	case p.Command == pipeline.CommandQueue && p.QueueReset:
		s.st.QueueOverride = nil
		text = "Queue settings back to the defaults: " + s.queueSettings().Describe() + "."
	case p.Command == pipeline.CommandQueue && p.Queue != nil:
		s.st.QueueOverride = s.st.QueueOverride.Merge(p.Queue)
		text = "Queue settings for this chat: " + s.queueSettings().Describe() + "."
	default:
		text = "Queue settings: " + s.queueSettings().Describe() + ". Change them with /queue <mode> [debounce:2s] [cap:25] [drop:old|new|summarize]."
	}
	if p.Command == pipeline.CommandModel || p.Command == pipeline.CommandQueue || p.Command == pipeline.CommandActivation {
		s.saveSession()
	}
	r := DirectReply{MessageID: in.MessageID, ThreadID: in.ThreadID, Text: text}
	s.sendReply(r)
}

// claim spends a claim code in a coroutine (a local activity against the
// store) and tells the sender how it went.
func (s *session) claim(in pipeline.Inbound, code string) {
	who := in.Channel + ":" + in.SenderID
	s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionClaim)
	s.repliesInFlight++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.repliesInFlight-- }()
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: localActivityTimeout, Summary: "claim"})
		var ok bool
		text := "That claim code is not valid, or was already used."
		if err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivityClaim, pipeline.ClaimRequest{Code: code, Who: who}).Get(ctx, &ok); err != nil {
			s.log.Error("Claim not checked", "error", err)
			text = "The claim could not be checked right now; send the code again."
		} else if ok {
			s.settings.Owners = append(s.settings.Owners, who)
			text = "You (" + who + ") are now an owner of this agent."
		}
		r := DirectReply{MessageID: in.MessageID, ThreadID: in.ThreadID, Text: text}
		s.sendReply(r)
	})
}

// pressButton applies a button press; a refusal is told to the presser
// under the proposal message, and a double click is one decision.
func (s *session) pressButton(in pipeline.Inbound) {
	decision, id, ok := pipeline.ParseAction(in.Action)
	if !ok {
		s.log.Warn("Unknown button action ignored", "action", in.Action)
		return
	}
	_, err := s.decide(pipeline.Decision{ID: id, Decision: decision, By: in.Channel + ":" + in.SenderID})
	if err != nil {
		s.st.Notices++
		r := DirectReply{MessageID: nonEmpty(in.ReplyTo, in.MessageID), ThreadID: in.ThreadID, Text: "⚠️ " + err.Error(), Key: fmt.Sprintf("notice-%d", s.st.Notices)}
		s.sendReply(r)
	}
}

// saveSession stores the chat's settings in its session entry, so they
// outlive this workflow run.
func (s *session) saveSession() {
	settings := pipeline.SessionSettings{ModelOverride: s.st.ModelOverride, Queue: s.st.QueueOverride, Activation: s.st.ActivationOverride}
	s.repliesInFlight++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.repliesInFlight-- }()
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: localActivityTimeout,
			Summary:             "save session settings",
		})
		if err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivitySaveSession, s.key, settings).Get(ctx, nil); err != nil {
			s.log.Warn("Session settings not saved; they hold until the session completes", "error", err)
		}
	})
}

// abort stops the running turn (its model step is cancelled, no further
// chunk is sent, a parked delivery is given up) and drops everything
// waiting, so the next message starts afresh.
func (s *session) abort() {
	stopped := false
	if a := s.st.Active; a != nil && !a.Aborted {
		a.Aborted, stopped = true, true
		if s.cancelTurn != nil {
			s.cancelTurn()
		}
	}
	for _, b := range s.st.Buffers {
		s.drop(Batch{Messages: b.Messages}, "aborted")
	}
	for _, b := range s.st.Queue {
		s.drop(b, "aborted")
	}
	if o := s.st.Overflow; o != nil {
		for _, id := range o.MessageIDs {
			if r := s.st.reaction(id); r != nil {
				s.react([]msgRef{{ID: id, Thread: r.ThreadID}}, pipeline.ReactionNone)
			}
		}
	}
	stopped = stopped || len(s.st.Queue) > 0 || len(s.st.Buffers) > 0
	s.st.Buffers, s.st.Queue, s.st.Overflow = nil, nil, nil
	if stopped {
		s.st.Counters.Aborted++
		s.st.AbortedLastRun = true
	}
	s.attrsDirty = true
}

func (s *session) primaryModel() string {
	if chain, _ := s.chain(); len(chain) > 0 {
		return chain[0]
	}
	return ""
}

func (s *session) statusInfo() pipeline.StatusInfo {
	info := pipeline.StatusInfo{
		Session:    s.key.WorkflowID(),
		Model:      s.primaryModel(),
		Queue:      s.queueSettings(),
		QueueDepth: len(s.st.Queue),
		State:      string(s.currentStatus()),
		TurnsTotal: s.st.Counters.Turns,
	}
	if t := s.st.LastTurn; t != nil {
		if t.Model != "" {
			info.Model = t.Model
			info.Fallback = strings.Join(t.Fallback, ", ")
		}
		if !t.FinishedAt.IsZero() {
			info.LastOutcome, info.LastTurn = t.Outcome, t.Duration()
		}
	}
	return info
}

// sendReply records a direct reply as pending and delivers it in its own
// coroutine, then marks the command ✅ (or ❌).
func (s *session) sendReply(r DirectReply) {
	if s.v.hardened && len(s.st.Replies) >= maxPendingReplies {
		s.log.Warn("Direct reply not sent: too many answers are being delivered at once; the command itself took effect",
			"message_id", r.MessageID, "pending", len(s.st.Replies))
		return
	}
	s.st.Replies = append(s.st.Replies, r)
	s.repliesInFlight++
	key := s.key.WorkflowID() + "/reply/" + r.MessageID
	if r.Key != "" {
		key += "/" + r.Key
	}
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.repliesInFlight-- }()
		_, err := s.deliver(ctx, pipeline.Delivery{
			Session:        s.key,
			IdempotencyKey: key,
			ThreadID:       r.ThreadID,
			ReplyTo:        r.MessageID,
			Text:           r.Text,
			Total:          1,
		})
		for i := range s.st.Replies {
			if s.st.Replies[i] == r {
				s.st.Replies = append(s.st.Replies[:i:i], s.st.Replies[i+1:]...)
				break
			}
		}
		if r.Key != "" {
			// A notice leaves the message's reaction to its turn.
			if err != nil {
				s.log.Error("Notice not delivered", "message_id", r.MessageID, "error", err)
			}
			return
		}
		ref := []msgRef{{ID: r.MessageID, Thread: r.ThreadID}}
		if err != nil {
			s.log.Error("Command reply not delivered", "message_id", r.MessageID, "error", err)
			s.react(ref, pipeline.ReactionError)
			return
		}
		s.react(ref, pipeline.ReactionDone)
	})
}
