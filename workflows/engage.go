package workflows

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

// Participant is someone seen speaking in the chat recently.
type Participant struct {
	ID       string    `json:"id"` // "provider:id"
	Name     string    `json:"name,omitempty"`
	IsBot    bool      `json:"is_bot,omitempty"`
	LastSeen time.Time `json:"last_seen"`
}

// permitted is the permission gate: AllowFrom (default everyone) and the
// owners, who are always let in.
func (s *session) permitted(sender string) bool {
	allow := s.settings.AllowFrom
	if len(allow) == 0 {
		allow = []string{"*"}
	}
	return pipeline.Allowed(sender, allow) || pipeline.Allowed(sender, s.settings.Owners)
}

func (s *session) activation() string {
	if s.st.ActivationOverride != "" {
		return s.st.ActivationOverride
	}
	if s.settings.Activation != "" {
		return s.settings.Activation
	}
	return pipeline.ActivationSmart
}

// seeParticipant records the sender as seen now, and forgets those not
// seen for a week.
func (s *session) seeParticipant(in pipeline.Inbound, now time.Time) {
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

func (s *session) humans() int {
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
func (s *session) engage(in pipeline.Inbound, now time.Time) pipeline.EngageResult {
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
		EffectiveHumans:    pipeline.EffectiveHumans(s.humans(), nil, now),
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

func (s *session) isBotMessage(platformID string) bool {
	for _, d := range s.st.Deliveries {
		if d.PlatformMessageID == platformID {
			return true
		}
	}
	return false
}

// namesPeerBot is true when text names a bot (other than the sender) that
// has spoken in the chat.
func (s *session) namesPeerBot(text, sender string) bool {
	lower := strings.ToLower(text)
	for _, p := range s.st.Participants {
		if p.IsBot && p.ID != sender && p.Name != "" && strings.Contains(lower, strings.ToLower(p.Name)) {
			return true
		}
	}
	return false
}

// observe keeps a message the agent will not answer as context for its
// next turn.
func (s *session) observe(in pipeline.Inbound, now time.Time) {
	s.st.Counters.Observed++
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
func (s *session) engagedText(text string, now time.Time, group bool) string {
	if observed := pipeline.RenderObserved(s.st.Observed, now, s.settings.ObservedMaxAge.D()); observed != "" {
		text = observed + "\n\n## Current message(s) (addressed to you)\n" + text
	}
	s.st.Observed = nil
	humans := 0 // the group nudge is for group chats only
	if group {
		humans = pipeline.EffectiveHumans(s.humans(), nil, now)
	}
	if notice := pipeline.TurnNotice(s.st.LoopGuard, humans); notice != "" {
		text += "\n\n" + notice
	}
	return text
}

// grantSticky lets the authors a reply answered follow up without a
// mention, unless the agent disengaged in this turn.
func (s *session) grantSticky(msgs []pipeline.Inbound, thread string) {
	if !slices.Contains(s.st.BotThreads, thread) {
		s.st.BotThreads = append(s.st.BotThreads, thread)
		if over := len(s.st.BotThreads) - maxBotThreads; over > 0 {
			s.st.BotThreads = s.st.BotThreads[over:]
		}
	}
	if s.st.DisengagedTurn == s.st.TurnSeq {
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
func (s *session) disengage() {
	s.st.Sticky = nil
	s.st.DisengagedTurn = s.st.TurnSeq
	s.log.Info("Disengaged: sticky credits dropped")
}
