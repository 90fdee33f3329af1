package retiring

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// replies is the part that answers without the model: it owns RepliesState
// (the direct replies not yet delivered, the notice counter) and the
// coroutines that deliver them, spend claim codes, save the chat's
// settings and record feedback, with their in-flight counts. It marks a
// command's message ✅ or ❌ through react, and touches nothing else; a
// claim adds the claimer to the owners in the run's settings.
type replies struct {
	*runEnv
	st *RepliesState
	// inFlight counts replies, claims and saves under way, and
	// feedbackInFlight feedback records: continue-as-new waits for both.
	inFlight         int
	feedbackInFlight int
	react            func([]msgRef, pipeline.ReactionState)
}

// busy is true while a reply, claim, save or feedback record is under way.
func (s *replies) busy() bool {
	return s.inFlight > 0 || s.feedbackInFlight > 0 || len(s.st.Replies) > 0
}

// answer replies to a command's message, which shows ✅ once delivered.
func (s *replies) answer(messageID, threadID, text string) {
	s.send(DirectReply{MessageID: messageID, ThreadID: threadID, Text: text})
}

// notice delivers a short message from the session itself under a
// message, leaving the message's reaction alone.
func (s *replies) notice(messageID, threadID, text string) {
	s.st.Notices++
	s.send(DirectReply{MessageID: messageID, ThreadID: threadID, Text: text, Key: fmt.Sprintf("notice-%d", s.st.Notices)})
}

// privateNotice is a notice meant for one user only (see
// pipeline.Delivery.PrivateTo).
func (s *replies) privateNotice(messageID, threadID, to, via, text string) {
	s.st.Notices++
	s.send(DirectReply{MessageID: messageID, ThreadID: threadID, Text: text, Key: fmt.Sprintf("notice-%d", s.st.Notices), To: to, Via: via})
}

// claim spends a claim code in a coroutine (a local activity against the
// store) and tells the sender how it went.
func (s *replies) claim(in pipeline.Inbound, code string) {
	who := in.Channel + ":" + in.SenderID
	s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionClaim)
	s.inFlight++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.inFlight-- }()
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
		s.answer(in.MessageID, in.ThreadID, text)
	})
}

// work runs a command's activities in a coroutine (continue-as-new
// waits for it) and answers the command with what do returns; "" marks
// it ✅ without an answer (the answer was the work itself: an export).
func (s *replies) work(in pipeline.Inbound, do func(ctx workflow.Context) string) {
	s.inFlight++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.inFlight-- }()
		if text := do(ctx); text != "" {
			s.answer(in.MessageID, in.ThreadID, text)
			return
		}
		s.react([]msgRef{{ID: in.MessageID, Thread: in.ThreadID}}, pipeline.ReactionDone)
	})
}

// save stores the chat's settings in its session entry, so they outlive
// this workflow run.
func (s *replies) save(settings pipeline.SessionSettings) {
	s.inFlight++
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.inFlight-- }()
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: localActivityTimeout,
			Summary:             "save session settings",
		})
		if err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivitySaveSession, s.key, settings).Get(ctx, nil); err != nil {
			s.log.Warn("Session settings not saved; they hold until the session completes", "error", err)
		}
	})
}

// send records a direct reply as pending and delivers it in its own
// coroutine, then marks the command ✅ (or ❌).
func (s *replies) send(r DirectReply) {
	if s.v.hardened && len(s.st.Replies) >= maxPendingReplies {
		s.log.Warn("Direct reply not sent: too many answers are being delivered at once; the command itself took effect",
			"message_id", r.MessageID, "pending", len(s.st.Replies))
		return
	}
	s.st.Replies = append(s.st.Replies, r)
	s.inFlight++
	key := s.key.WorkflowID() + "/reply/" + r.MessageID
	if r.Key != "" {
		key += "/" + r.Key
	}
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		defer func() { s.inFlight-- }()
		_, err := s.deliver(ctx, pipeline.Delivery{
			Session:        s.key,
			IdempotencyKey: key,
			ThreadID:       r.ThreadID,
			ReplyTo:        r.MessageID,
			Text:           r.Text,
			Total:          1,
			PrivateTo:      r.To,
			PrivateVia:     r.Via,
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
