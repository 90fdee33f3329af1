package pipeline

import (
	"slices"
	"strings"
	"time"
)

// InboundDecision is what happens to an admitted message.
type InboundDecision string

const (
	// DecisionEngage wakes the agent: the message is answered.
	DecisionEngage InboundDecision = "engage"
	// DecisionObserve keeps the message as context for a later turn.
	DecisionObserve InboundDecision = "observe"
	// DecisionGate asks the gate model (activation "gated").
	DecisionGate InboundDecision = "gate"
	// DecisionDenied is the permission gate's refusal; never the ladder's.
	DecisionDenied InboundDecision = "denied"
	// DecisionClaim is a claim code; never the ladder's.
	DecisionClaim InboundDecision = "claim"
)

// Activation modes of a channel or chat.
const (
	ActivationMention = "mention" // triggers, alias, sticky
	ActivationSmart   = "smart"   // the whole ladder
	ActivationGated   = "gated"   // triggers, else the gate model
	ActivationAlways  = "always"  // every message
)

// EngageInput is everything the ladder looks at: booleans the adapter
// classified from the platform event, and the session's own facts. No
// message semantics: the ladder decides whether the agent is in the
// conversation, not whether a message deserves a reply.
type EngageInput struct {
	Activation string
	// Explicit triggers.
	DM, MentionsBot, ReplyToBot bool
	// Suppressors.
	MentionsOthers     bool // tags someone, none of them the bot
	ReplyToOther       bool // a reply to a message the bot did not write
	BotInThread        bool // the bot has spoken in this thread
	TextTargetsPeerBot bool // names a peer bot seen in the chat
	// Who and where.
	AuthorIsBot     bool
	EffectiveHumans int
	// Text is matched against Aliases (case-insensitive substring).
	Text    string
	Aliases []string
	// HasStickyCredit: the author holds an unexpired credit.
	HasStickyCredit bool
}

// EngageResult is the ladder's answer, with the rung that decided.
type EngageResult struct {
	Decision InboundDecision
	Reason   string
	// ConsumeCredit is true when the author's sticky credit is spent.
	ConsumeCredit bool
}

// DecideEngagement is the engage ladder: the first rung that matches wins,
// and falling off the bottom observes. It never returns denied or claim;
// those are decided before it.
func DecideEngagement(in EngageInput) EngageResult {
	if in.Activation == ActivationAlways {
		return EngageResult{Decision: DecisionEngage, Reason: "always"}
	}
	switch {
	case in.DM:
		return EngageResult{Decision: DecisionEngage, Reason: "dm"}
	case in.MentionsBot:
		return EngageResult{Decision: DecisionEngage, Reason: "mention"}
	case in.ReplyToBot:
		return EngageResult{Decision: DecisionEngage, Reason: "reply_to_bot"}
	}
	if in.Activation == ActivationGated {
		return EngageResult{Decision: DecisionGate, Reason: "gated"}
	}
	aliased := MatchesAlias(in.Text, in.Aliases)
	if in.HasStickyCredit {
		// In a busy group a credited author may be talking to someone
		// else now: step aside and keep the credit for their next
		// untargeted follow-up, unless they also name us.
		if in.EffectiveHumans > 1 && targetsSomeoneElse(in) && !aliased {
			return EngageResult{Decision: DecisionObserve, Reason: "sticky_targets_other"}
		}
		return EngageResult{Decision: DecisionEngage, Reason: "sticky", ConsumeCredit: true}
	}
	if aliased {
		return EngageResult{Decision: DecisionEngage, Reason: "alias"}
	}
	if in.Activation == ActivationMention {
		return EngageResult{Decision: DecisionObserve, Reason: "not_addressed"}
	}
	if targetsSomeoneElse(in) {
		return EngageResult{Decision: DecisionObserve, Reason: "suppressed"}
	}
	if in.EffectiveHumans <= 1 && !in.AuthorIsBot {
		return EngageResult{Decision: DecisionEngage, Reason: "solo_human"}
	}
	return EngageResult{Decision: DecisionObserve, Reason: "default"}
}

func targetsSomeoneElse(in EngageInput) bool {
	return in.MentionsOthers || (in.ReplyToOther && !in.BotInThread) || in.TextTargetsPeerBot
}

// MatchesAlias is a case-insensitive substring match of any alias.
func MatchesAlias(text string, aliases []string) bool {
	lower := strings.ToLower(text)
	for _, a := range aliases {
		if a = strings.TrimSpace(a); a != "" && strings.Contains(lower, strings.ToLower(a)) {
			return true
		}
	}
	return false
}

// Allowed checks "provider:id" against an allowlist whose entries are
// "provider:id" or "*".
func Allowed(who string, list []string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, who)
}

// StickyTTL is how long a sticky credit lasts.
const StickyTTL = 15 * time.Minute

// StickyCredit is one author's credit to be engaged without a mention.
type StickyCredit struct {
	Author  string    `json:"author"`
	Expires time.Time `json:"expires"`
}

// StickyLedger holds the credits of a chat, in a slice so that workflow
// code iterates it deterministically.
type StickyLedger []StickyCredit

// Grant gives each author a fresh credit until now+ttl.
func (l StickyLedger) Grant(authors []string, now time.Time, ttl time.Duration) StickyLedger {
	for _, a := range authors {
		l = l.without(a)
		l = append(l, StickyCredit{Author: a, Expires: now.Add(ttl)})
	}
	return l
}

// Has reports whether author holds an unexpired credit.
func (l StickyLedger) Has(author string, now time.Time) bool {
	for _, c := range l {
		if c.Author == author && now.Before(c.Expires) {
			return true
		}
	}
	return false
}

// Consume spends author's credit (one-shot) and drops expired ones.
func (l StickyLedger) Consume(author string, now time.Time) StickyLedger {
	kept := StickyLedger{}
	for _, c := range l.without(author) {
		if now.Before(c.Expires) {
			kept = append(kept, c)
		}
	}
	return kept
}

func (l StickyLedger) without(author string) StickyLedger {
	kept := StickyLedger{}
	for _, c := range l {
		if c.Author != author {
			kept = append(kept, c)
		}
	}
	return kept
}

// MembershipCount is an adapter's count of a chat's members.
type MembershipCount struct {
	Humans    int       `json:"humans"`
	Truncated bool      `json:"truncated"`
	FetchedAt time.Time `json:"fetched_at"`
}

// MembershipFreshness is how long a complete member count is ground truth.
const MembershipFreshness = time.Minute

// EffectiveHumans reconciles the humans seen speaking recently with an
// adapter's member count: a fresh and complete count is ground truth (it
// sees lurkers and prunes leavers); otherwise the larger number, so active
// humans are never under-counted.
func EffectiveHumans(seen int, m *MembershipCount, now time.Time) int {
	if m == nil {
		return seen
	}
	if !m.Truncated && now.Sub(m.FetchedAt) < MembershipFreshness {
		return m.Humans
	}
	return max(seen, m.Humans)
}

// Peer-bot loop guard limits.
const (
	MaxPeerBotTurnsSinceHuman = 5
	MaxPeerBotTurnsInWindow   = 5
	PeerBotWindow             = time.Minute
)

// LoopGuard counts engaged peer-bot turns since the last human, so two bots
// cannot talk to each other forever.
type LoopGuard struct {
	SinceHuman int         `json:"since_human"`
	Recent     []time.Time `json:"recent,omitempty"`
	Active     bool        `json:"active"`
}

// Observe updates the guard for an inbound message: a human resets it; an
// engaged peer bot counts, and trips it at 5 in a row or 5 within 60 s.
func (g LoopGuard) Observe(authorIsBot, engaged bool, now time.Time) LoopGuard {
	if !authorIsBot {
		return LoopGuard{}
	}
	if !engaged {
		return g
	}
	g.SinceHuman++
	recent := []time.Time{}
	for _, t := range g.Recent {
		if now.Sub(t) < PeerBotWindow {
			recent = append(recent, t)
		}
	}
	g.Recent = append(recent, now)
	g.Active = g.Active || g.SinceHuman >= MaxPeerBotTurnsSinceHuman || len(g.Recent) >= MaxPeerBotTurnsInWindow
	return g
}

// Notices added to the user turn, fenced so the model knows they are not
// from a person.
const (
	LoopGuardNotice = "**[SYSTEM MESSAGE — not from a human]**\nYou have been talking with other bots for several turns with no human in between. Reply NO_REPLY to stay silent unless a human needs you."
	GroupNudge      = "**[SYSTEM MESSAGE — not from a human]**\nThis is a group chat, and you are woken on every message from someone you recently talked with. Reply only when you are addressed or are directly continuing your own last exchange; otherwise call skip_response. When unsure, stay silent."
)

// TurnNotice is the system notice for a turn: the loop guard's when it
// fired, else the group nudge in a chat with several humans.
func TurnNotice(guard LoopGuard, effectiveHumans int) string {
	switch {
	case guard.Active:
		return LoopGuardNotice
	case effectiveHumans > 1:
		return GroupNudge
	}
	return ""
}

// Observed is a message the agent saw but did not answer.
type Observed struct {
	Sender string    `json:"sender"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

// ContextBufferSize bounds the observed-context buffer.
const ContextBufferSize = 20

// Observe adds a message to the buffer, trimming the oldest past the size.
func ObserveMessage(buf []Observed, m Observed) []Observed {
	buf = append(buf, m)
	if over := len(buf) - ContextBufferSize; over > 0 {
		buf = append([]Observed(nil), buf[over:]...)
	}
	return buf
}

// RenderObserved is the block the next engaged turn carries, without the
// messages older than maxAge (zero keeps all).
func RenderObserved(buf []Observed, now time.Time, maxAge time.Duration) string {
	var lines []string
	for _, m := range buf {
		if maxAge > 0 && now.Sub(m.At) > maxAge {
			continue
		}
		lines = append(lines, "- "+m.Sender+": "+strings.Join(strings.Fields(m.Text), " "))
	}
	if len(lines) == 0 {
		return ""
	}
	return "## Recent context (not addressed to you, for awareness only)\n" + strings.Join(lines, "\n")
}
