package session

import (
	"slices"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Engagement's bounds. With them the part's state stays a few hundred
// KiB at most whatever a chat sends: it is carried by continue-as-new.
const (
	// participantWindow forgets a participant not seen for a week: the
	// count of humans is about who speaks here now.
	participantWindow = 7 * 24 * time.Hour
	// maxParticipants bounds the participants, and the sticky credits
	// (at most one per recent participant).
	maxParticipants = 200
	// maxBotThreads bounds the threads the agent is known to speak in;
	// the oldest is forgotten first.
	maxBotThreads = 100
	// maxObservedBytes bounds the text kept of one observed message; the
	// observed messages themselves are bounded by
	// pipeline.ContextBufferSize.
	maxObservedBytes = 4 << 10
)

// EngagementState is the engagement part: whether the agent answers a
// message. It keeps who speaks here, the sticky credits, what the agent
// watched without answering, the peer-bot loop guard, the chat's
// /activation override, and a gated chat's batch waiting for the gate
// model (gate.go).
type EngagementState struct {
	Participants []Participant         `json:"participants,omitempty"`
	Sticky       pipeline.StickyLedger `json:"sticky,omitempty"`
	Observed     []pipeline.Observed   `json:"observed,omitempty"`
	LoopGuard    pipeline.LoopGuard    `json:"loop_guard"`
	// BotThreads are the threads the agent has replied in.
	BotThreads []string `json:"bot_threads,omitempty"`
	// DisengagedTurn is the turn during which the agent disengaged: its
	// reply grants no sticky credit.
	DisengagedTurn     string `json:"disengaged_turn,omitempty"`
	ActivationOverride string `json:"activation_override,omitempty"`
	LastDenied         string `json:"last_denied,omitempty"`
	// Membership is the newest member count an adapter sent with a
	// message (one, replaced).
	Membership *pipeline.MembershipCount `json:"membership,omitempty"`
	// The gated batch waiting for the gate model (gate.go): its messages,
	// when its first came and when it goes, and its generation, which
	// names its gate call.
	GateBuffer  []pipeline.Inbound `json:"gate_buffer,omitempty"`
	GateFirstAt time.Time          `json:"gate_first_at,omitzero"`
	GateFlushAt time.Time          `json:"gate_flush_at,omitzero"`
	GateSeq     int                `json:"gate_seq,omitempty"`
	// GateCalls are the batches the gate model is being asked about.
	GateCalls []GateCall       `json:"gate_calls,omitempty"`
	Counts    EngagementCounts `json:"counts"`
}

// Participant is someone seen speaking in the chat recently.
type Participant struct {
	ID       string    `json:"id"` // "provider:id"
	Name     string    `json:"name,omitempty"`
	IsBot    bool      `json:"is_bot,omitempty"`
	LastSeen time.Time `json:"last_seen"`
}

// EngagementCounts count the messages the agent did not answer at once:
// kept out by the permission gate, observed, or let through by the gate
// model.
type EngagementCounts struct {
	Denied   int `json:"denied"`
	Observed int `json:"observed"`
	Gated    int `json:"gated"`
}

// Permitted is the permission gate: AllowFrom (everyone when empty), and
// the owners, who are always let in.
func (s *EngagementState) Permitted(env Env, in pipeline.Inbound) bool {
	allow := env.Settings.AllowFrom
	if len(allow) == 0 {
		allow = []string{"*"}
	}
	return pipeline.Allowed(senderOf(in), allow) || env.IsOwner(in)
}

// Deny records a message the permission gate kept out. It is never
// given to the model and never answered, so a stranger learns nothing of
// the agent; the state query shows it.
func (s *EngagementState) Deny(env Env, in pipeline.Inbound) {
	s.Counts.Denied++
	s.LastDenied = in.MessageID
	env.logger().Info("Inbound decision", "message_id", in.MessageID, "decision", pipeline.DecisionDenied)
}

// See records the sender as seen now, forgetting those not seen for a
// week, and keeps the newest member count the message carries.
func (s *EngagementState) See(env Env, in pipeline.Inbound) {
	if m := in.Membership; m != nil && (s.Membership == nil || m.FetchedAt.After(s.Membership.FetchedAt)) {
		count := *m
		s.Membership = &count
	}
	id := senderOf(in)
	kept := s.Participants[:0]
	for _, p := range s.Participants {
		if p.ID != id && env.Now.Sub(p.LastSeen) < participantWindow {
			kept = append(kept, p)
		}
	}
	kept = append(kept, Participant{ID: id, Name: in.SenderName, IsBot: in.SenderIsBot, LastSeen: env.Now})
	if over := len(kept) - maxParticipants; over > 0 {
		kept = kept[over:]
	}
	s.Participants = kept
}

// TurnFacts are what the engagement rules need to know of the turns.
type TurnFacts struct {
	// RepliesToBot: the message replies to one the session delivered.
	RepliesToBot bool
	// TurnRunning: a turn is under way; no gate is asked then.
	TurnRunning bool
}

// Engage decides whether the agent answers a permitted message (the
// engage ladder, pipeline.DecideEngagement) and does what the decision
// calls for: a message to observe is kept as context, a gated one waits
// for the gate model, and an engaged one (the only decision that goes on
// to a turn) turns a pending gated batch into context, as a trigger
// bypasses the gate.
func (s *EngagementState) Engage(env Env, in pipeline.Inbound, turns TurnFacts) (pipeline.EngageResult, []Effect) {
	result := s.decide(env, in, turns.RepliesToBot)
	switch result.Decision {
	case pipeline.DecisionGate:
		return result, s.gate(env, in, turns.TurnRunning)
	case pipeline.DecisionObserve:
		s.observe(env, in)
		return result, nil
	}
	return result, s.dropGateBuffer(env)
}

// decide runs the ladder, spends a sticky credit it used, counts the
// message in the loop guard, and logs the decision with the message's
// ID (never its text).
func (s *EngagementState) decide(env Env, in pipeline.Inbound, repliesToBot bool) pipeline.EngageResult {
	sender := senderOf(in)
	replyToBot := in.ReplyTo != "" && (in.ReplyToBot || repliesToBot)
	result := pipeline.DecideEngagement(pipeline.EngageInput{
		Activation:         s.Activation(env),
		DM:                 in.ChatType != pipeline.ChatGroup,
		MentionsBot:        in.MentionsBot,
		ReplyToBot:         replyToBot,
		MentionsOthers:     in.MentionsOthers,
		ReplyToOther:       in.ReplyTo != "" && !replyToBot,
		BotInThread:        slices.Contains(s.BotThreads, in.ThreadID),
		TextTargetsPeerBot: s.namesPeerBot(in.Text, sender),
		AuthorIsBot:        in.SenderIsBot,
		EffectiveHumans:    s.effectiveHumans(env),
		Text:               in.Text,
		Aliases:            env.Settings.Aliases,
		HasStickyCredit:    s.Sticky.Has(sender, env.Now),
	})
	if result.ConsumeCredit {
		s.Sticky = s.Sticky.Consume(sender, env.Now)
	}
	s.LoopGuard = s.LoopGuard.Observe(in.SenderIsBot, result.Decision == pipeline.DecisionEngage, env.Now)
	env.logger().Info("Inbound decision", "message_id", in.MessageID, "decision", result.Decision, "reason", result.Reason)
	return result
}

// Activation is the chat's mode: its /activation override, else the
// channel's, else smart.
func (s *EngagementState) Activation(env Env) string {
	if s.ActivationOverride != "" {
		return s.ActivationOverride
	}
	if env.Settings.Activation != "" {
		return env.Settings.Activation
	}
	return pipeline.ActivationSmart
}

// SetActivation is the chat's /activation override.
func (s *EngagementState) SetActivation(mode string) { s.ActivationOverride = mode }

// namesPeerBot is true when text names a bot (other than the sender) that
// has spoken in the chat.
func (s *EngagementState) namesPeerBot(text, sender string) bool {
	lower := strings.ToLower(text)
	for _, p := range s.Participants {
		if p.IsBot && p.ID != sender && p.Name != "" && strings.Contains(lower, strings.ToLower(p.Name)) {
			return true
		}
	}
	return false
}

func (s *EngagementState) effectiveHumans(env Env) int {
	humans := 0
	for _, p := range s.Participants {
		if !p.IsBot {
			humans++
		}
	}
	return pipeline.EffectiveHumans(humans, s.Membership, env.Now)
}

// observe keeps a message the agent does not answer as context for its
// next turn, its text cut to maxObservedBytes.
func (s *EngagementState) observe(env Env, in pipeline.Inbound) {
	s.Counts.Observed++
	name := in.SenderName
	if name == "" {
		name = in.SenderID
	}
	text := pipeline.CutBytes(in.Text, maxObservedBytes)
	s.Observed = pipeline.ObserveMessage(s.Observed, pipeline.Observed{Sender: name, Text: text, At: env.Now})
}

// EngagedText is a turn's text with what the agent watched while quiet
// (which the turn takes: the next one starts without it) and the system
// notice the chat calls for: the loop guard's, or in a group with
// several humans the group nudge.
func (s *EngagementState) EngagedText(env Env, text string, group bool) string {
	if observed := pipeline.RenderObserved(s.Observed, env.Now, env.Settings.ObservedMaxAge.D()); observed != "" {
		text = observed + "\n\n## Current message(s) (addressed to you)\n" + text
	}
	s.Observed = nil
	humans := 0 // the group nudge is for group chats only
	if group {
		humans = s.effectiveHumans(env)
	}
	if notice := pipeline.TurnNotice(s.LoopGuard, humans); notice != "" {
		text += "\n\n" + notice
	}
	return text
}

// GrantSticky answers a reply of turnID delivered in thread: the agent
// speaks in that thread, and the authors it answered may follow up
// without a mention for pipeline.StickyTTL, unless the agent disengaged
// during that turn.
func (s *EngagementState) GrantSticky(env Env, turnID string, msgs []pipeline.Inbound, thread string) []Effect {
	if !slices.Contains(s.BotThreads, thread) {
		s.BotThreads = append(s.BotThreads, thread)
		if over := len(s.BotThreads) - maxBotThreads; over > 0 {
			s.BotThreads = s.BotThreads[over:]
		}
	}
	if s.DisengagedTurn == turnID {
		return nil
	}
	var authors []string
	for _, m := range msgs {
		if id := senderOf(m); !slices.Contains(authors, id) {
			authors = append(authors, id)
		}
	}
	// Expired credits go, and at most one per recent participant stays.
	s.Sticky = s.Sticky.Consume("", env.Now)
	if over := len(s.Sticky) + len(authors) - maxParticipants; over > 0 {
		s.Sticky = s.Sticky[min(over, len(s.Sticky)):]
	}
	s.Sticky = s.Sticky.Grant(authors, env.Now, pipeline.StickyTTL)
	return nil
}

// Disengage drops every sticky credit: the agent answers again only when
// addressed. runningTurn is the turn under way ("" between turns), whose
// reply then grants none again.
func (s *EngagementState) Disengage(env Env, runningTurn string) {
	s.Sticky = nil
	s.DisengagedTurn = runningTurn
	env.logger().Info("Disengaged: sticky credits dropped")
}

func senderOf(in pipeline.Inbound) string { return in.Channel + ":" + in.SenderID }
