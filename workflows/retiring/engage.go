package retiring

import (
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// Bounds on the engagement state a session keeps.
const (
	participantWindow = 7 * 24 * time.Hour
	maxParticipants   = 200
	maxBotThreads     = 100
)

// engagement is the part that decides whether the agent answers: it owns
// EngagementState (participants, sticky credits, the observed context, the
// peer-bot loop guard, the activation override, the gated batch) and the
// gate model's coroutine. It learns about turns only through callbacks:
// whether one runs, the turn number, which platform messages are the
// bot's, and forward, which hands a batch the gate let through to a turn.
type engagement struct {
	*runEnv
	st *EngagementState
	// gating counts gate model calls under way.
	gating int
	// cancelGateTimer cancels the wait of the gated batch, which is then
	// asked at once.
	cancelGateTimer workflow.CancelFunc
	turnRunning     func() bool
	turnSeq         func() int
	isBotMessage    func(platformID string) bool
	forward         func(batch []pipeline.Inbound)
}

// permitted is the permission gate: AllowFrom (default everyone) and the
// owners, who are always let in.
func (s *engagement) permitted(in pipeline.Inbound) bool {
	allow := s.settings.AllowFrom
	if len(allow) == 0 {
		allow = []string{"*"}
	}
	return pipeline.Allowed(in.Channel+":"+in.SenderID, allow) || s.isOwner(in)
}

func (s *engagement) activation() string {
	if s.st.ActivationOverride != "" {
		return s.st.ActivationOverride
	}
	if s.settings.Activation != "" {
		return s.settings.Activation
	}
	return pipeline.ActivationSmart
}

// seeParticipant records the sender as seen now, and forgets those not
// seen for a week; and keeps the newest member count the message carries.
func (s *engagement) seeParticipant(in pipeline.Inbound, now time.Time) {
	if m := in.Membership; s.v.slack && m != nil && (s.st.Membership == nil || m.FetchedAt.After(s.st.Membership.FetchedAt)) {
		count := *m
		s.st.Membership = &count
	}
	id := in.Channel + ":" + in.SenderID
	kept := s.st.Participants[:0]
	for _, p := range s.st.Participants {
		if p.ID != id && now.Sub(p.LastSeen) < participantWindow {
			kept = append(kept, p)
		}
	}
	kept = append(kept, Participant{ID: id, Name: in.SenderName, IsBot: in.SenderIsBot, LastSeen: now})
	if over := len(kept) - maxParticipants; over > 0 {
		kept = kept[over:]
	}
	s.st.Participants = kept
}

func (s *engagement) humans() int {
	n := 0
	for _, p := range s.st.Participants {
		if !p.IsBot {
			n++
		}
	}
	return n
}

// engage runs the engage ladder for a message, and logs the decision with
// its message ID (never its text).
func (s *engagement) engage(in pipeline.Inbound, now time.Time) pipeline.EngageResult {
	sender := in.Channel + ":" + in.SenderID
	replyToBot := in.ReplyTo != "" && (in.ReplyToBot || s.isBotMessage(in.ReplyTo))
	result := pipeline.DecideEngagement(pipeline.EngageInput{
		Activation:         s.activation(),
		DM:                 in.ChatType != pipeline.ChatGroup,
		MentionsBot:        in.MentionsBot,
		ReplyToBot:         replyToBot,
		MentionsOthers:     in.MentionsOthers,
		ReplyToOther:       in.ReplyTo != "" && !replyToBot,
		BotInThread:        slices.Contains(s.st.BotThreads, in.ThreadID),
		TextTargetsPeerBot: s.namesPeerBot(in.Text, sender),
		AuthorIsBot:        in.SenderIsBot,
		EffectiveHumans:    pipeline.EffectiveHumans(s.humans(), s.st.Membership, now),
		Text:               in.Text,
		Aliases:            s.settings.Aliases,
		HasStickyCredit:    s.st.Sticky.Has(sender, now),
	})
	if result.ConsumeCredit {
		s.st.Sticky = s.st.Sticky.Consume(sender, now)
	}
	s.st.LoopGuard = s.st.LoopGuard.Observe(in.SenderIsBot, result.Decision == pipeline.DecisionEngage, now)
	s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", result.Decision, "reason", result.Reason)
	return result
}

// namesPeerBot is true when text names a bot (other than the sender) that
// has spoken in the chat.
func (s *engagement) namesPeerBot(text, sender string) bool {
	lower := strings.ToLower(text)
	for _, p := range s.st.Participants {
		if p.IsBot && p.ID != sender && p.Name != "" && strings.Contains(lower, strings.ToLower(p.Name)) {
			return true
		}
	}
	return false
}

// deny records a message the permission gate kept out: never given to
// the model, visible in the state query.
func (s *engagement) deny(in pipeline.Inbound) {
	s.counters.Denied++
	s.st.LastDenied = in.MessageID
	s.log.Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionDenied)
}

// setActivation is the chat's /activation override.
func (s *engagement) setActivation(mode string) { s.st.ActivationOverride = mode }

// observe keeps a message the agent will not answer as context for its
// next turn.
func (s *engagement) observe(in pipeline.Inbound, now time.Time) {
	s.counters.Observed++
	name := in.SenderName
	if name == "" {
		name = in.SenderID
	}
	text := in.Text
	if s.v.hardened {
		text = pipeline.CutBytes(text, maxObservedBytes)
	}
	s.st.Observed = pipeline.ObserveMessage(s.st.Observed, pipeline.Observed{Sender: name, Text: text, At: now})
}

// engagedText wraps a turn's text with what the agent watched while quiet
// and the system notice the chat calls for.
func (s *engagement) engagedText(text string, now time.Time, group bool) string {
	if observed := pipeline.RenderObserved(s.st.Observed, now, s.settings.ObservedMaxAge.D()); observed != "" {
		text = observed + "\n\n## Current message(s) (addressed to you)\n" + text
	}
	s.st.Observed = nil
	humans := 0 // the group nudge is for group chats only
	if group {
		humans = pipeline.EffectiveHumans(s.humans(), s.st.Membership, now)
	}
	if notice := pipeline.TurnNotice(s.st.LoopGuard, humans); notice != "" {
		text += "\n\n" + notice
	}
	return text
}

// grantSticky lets the authors a reply answered follow up without a
// mention, unless the agent disengaged in this turn.
func (s *engagement) grantSticky(msgs []pipeline.Inbound, thread string) {
	if !slices.Contains(s.st.BotThreads, thread) {
		s.st.BotThreads = append(s.st.BotThreads, thread)
		if over := len(s.st.BotThreads) - maxBotThreads; over > 0 {
			s.st.BotThreads = s.st.BotThreads[over:]
		}
	}
	if s.st.DisengagedTurn == s.turnSeq() {
		return
	}
	var authors []string
	for _, m := range msgs {
		if id := m.Channel + ":" + m.SenderID; !slices.Contains(authors, id) {
			authors = append(authors, id)
		}
	}
	now := workflow.Now(s.ctx)
	if s.v.hardened {
		// Expired credits go, and at most one per recent participant
		// stays.
		s.st.Sticky = s.st.Sticky.Consume("", now)
		if over := len(s.st.Sticky) + len(authors) - maxParticipants; over > 0 {
			s.st.Sticky = s.st.Sticky[min(over, len(s.st.Sticky)):]
		}
	}
	s.st.Sticky = s.st.Sticky.Grant(authors, now, pipeline.StickyTTL)
}

// disengage drops every sticky credit; a reply in the same turn does not
// grant them again.
func (s *engagement) disengage() {
	s.st.Sticky = nil
	s.st.DisengagedTurn = s.turnSeq()
	s.log.Info("Disengaged: sticky credits dropped")
}
