package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// envWith is envAt with settings.
func envWith(d time.Duration, settings pipeline.Settings) Env {
	env := envAt(d)
	env.Settings = settings
	return env
}

func groupMsg(id, sender, text string) pipeline.Inbound {
	return pipeline.Inbound{Channel: "web", ChatType: pipeline.ChatGroup, MessageID: id, SenderID: sender, SenderName: sender, Text: text}
}

func TestPermittedLetsInTheAllowedAndTheOwners(t *testing.T) {
	owner := msg("1", "boss")
	owner.Channel = "web"
	verified := msg("2", "eve")
	verified.Channel, verified.SenderIsOwner = "web", true
	stranger := msg("3", "eve")
	stranger.Channel = "web"
	tests := []struct {
		name      string
		allow     []string
		in        pipeline.Inbound
		permitted bool
	}{
		{name: "no list lets everyone in", in: stranger, permitted: true},
		{name: "a wildcard lets everyone in", allow: []string{"*"}, in: stranger, permitted: true},
		{name: "a listed sender", allow: []string{"web:eve"}, in: stranger, permitted: true},
		{name: "an unlisted sender", allow: []string{"web:alice"}, in: stranger, permitted: false},
		{name: "the same ID on another channel", allow: []string{"chat:eve"}, in: stranger, permitted: false},
		{name: "an owner of the settings", allow: []string{"web:alice"}, in: owner, permitted: true},
		{name: "an owner the adapter verified", allow: []string{"web:alice"}, in: verified, permitted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s EngagementState
			env := envWith(0, pipeline.Settings{AllowFrom: tt.allow, Owners: []string{"web:boss"}})
			assert.Equal(t, tt.permitted, s.Permitted(env, tt.in))
		})
	}
}

func TestDenyCountsTheMessageAndAnswersNothing(t *testing.T) {
	var s EngagementState
	s.Deny(envAt(0), msg("e1", "eve"))
	s.Deny(envAt(time.Second), msg("e2", "eve"))
	assert.Equal(t, 2, s.Counts.Denied)
	assert.Equal(t, "e2", s.LastDenied)
	assert.Empty(t, s.Participants, "a denied sender is no participant")
}

func TestSeeKeepsRecentParticipantsOnceEachWithinTheirBound(t *testing.T) {
	var s EngagementState
	s.See(envAt(0), groupMsg("1", "old", "hi"))
	s.See(envAt(time.Hour), groupMsg("2", "alice", "hi"))
	s.See(envAt(2*time.Hour), groupMsg("3", "alice", "again"))
	require.Len(t, s.Participants, 2, "a sender is one participant, however often seen")
	assert.Equal(t, t0.Add(2*time.Hour), s.Participants[1].LastSeen)

	s.See(envAt(participantWindow+time.Minute), groupMsg("4", "bob", "hi"))
	assert.Equal(t, []string{"web:alice", "web:bob"}, participantIDs(s), "a participant not seen for a week is forgotten")

	for i := range maxParticipants + 10 {
		s.See(envAt(participantWindow+time.Duration(i)*time.Second), groupMsg("m", string(rune(0x100+i)), "hi"))
	}
	assert.Len(t, s.Participants, maxParticipants)
	assert.Equal(t, "web:"+string(rune(0x100+maxParticipants+9)), s.Participants[maxParticipants-1].ID, "the newest stay")
}

func participantIDs(s EngagementState) []string {
	var ids []string
	for _, p := range s.Participants {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestSeeKeepsTheNewestMemberCount(t *testing.T) {
	var s EngagementState
	counted := func(humans int, at time.Duration) pipeline.Inbound {
		in := groupMsg("m", "alice", "hi")
		in.Membership = &pipeline.MembershipCount{Humans: humans, FetchedAt: t0.Add(at)}
		return in
	}
	s.See(envAt(0), counted(5, 0))
	s.See(envAt(time.Second), counted(7, -time.Minute))
	require.NotNil(t, s.Membership)
	assert.Equal(t, 5, s.Membership.Humans, "an older count does not replace a newer one")
	s.See(envAt(2*time.Second), counted(3, time.Second))
	assert.Equal(t, 3, s.Membership.Humans)
	s.See(envAt(3*time.Second), groupMsg("n", "bob", "hi"))
	assert.Equal(t, 3, s.Membership.Humans, "a message without a count keeps the last")
}

// engageCase is one message through See and Engage, in a chat whose
// state setup builds.
type engageCase struct {
	name     string
	settings pipeline.Settings
	setup    func(*EngagementState)
	in       pipeline.Inbound
	turns    TurnFacts
	decision pipeline.InboundDecision
	reason   string
}

func TestEngageDecidesByTheLadder(t *testing.T) {
	gated := pipeline.Settings{Activation: pipeline.ActivationGated, GateModel: "gate-model"}
	tests := []engageCase{
		{name: "a direct message", in: msg("1", "alice"), decision: pipeline.DecisionEngage, reason: "dm"},
		{name: "the only human of a group", in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionEngage, reason: "solo_human"},
		{name: "a group of two humans", setup: seen("bob"), in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionObserve, reason: "default"},
		{name: "a mention", setup: seen("bob"), in: mentions(groupMsg("1", "alice", "hi")), decision: pipeline.DecisionEngage, reason: "mention"},
		{name: "a reply the platform says is to the bot", setup: seen("bob"), in: replyTo(groupMsg("1", "alice", "hi"), true), decision: pipeline.DecisionEngage, reason: "reply_to_bot"},
		{name: "a reply to a message the session delivered", setup: seen("bob"), in: replyTo(groupMsg("1", "alice", "hi"), false), turns: TurnFacts{RepliesToBot: true}, decision: pipeline.DecisionEngage, reason: "reply_to_bot"},
		{name: "a reply to someone else", in: replyTo(groupMsg("1", "alice", "hi"), false), decision: pipeline.DecisionObserve, reason: "suppressed"},
		{name: "an alias", setup: seen("bob"), settings: pipeline.Settings{Aliases: []string{"Robo"}}, in: groupMsg("1", "alice", "hey robo"), decision: pipeline.DecisionEngage, reason: "alias"},
		{name: "a named peer bot", setup: seenBot("Helper"), in: groupMsg("1", "alice", "helper, go"), decision: pipeline.DecisionObserve, reason: "suppressed"},
		{name: "mention mode, not addressed", settings: pipeline.Settings{Activation: pipeline.ActivationMention}, in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionObserve, reason: "not_addressed"},
		{name: "the chat's override wins over the channel's mode", settings: pipeline.Settings{Activation: pipeline.ActivationMention}, setup: func(s *EngagementState) { s.SetActivation(pipeline.ActivationAlways) }, in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionEngage, reason: "always"},
		{name: "a sticky credit", setup: withCredit("alice", "bob"), in: groupMsg("1", "alice", "and?"), decision: pipeline.DecisionEngage, reason: "sticky"},
		{name: "a sticky credit talking to someone else in a busy group", setup: withCredit("alice", "bob"), in: mentionsOthers(groupMsg("1", "alice", "@carol and?")), decision: pipeline.DecisionObserve, reason: "sticky_targets_other"},
		{name: "a fresh member count of a busy group", setup: counted(3, time.Second), in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionObserve, reason: "default"},
		{name: "a fresh member count prunes who left", setup: counted(1, time.Second, "bob"), in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionEngage, reason: "solo_human"},
		{name: "a stale member count never lowers the humans seen", setup: counted(1, pipeline.MembershipFreshness, "bob"), in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionObserve, reason: "default"},
		{name: "gated", settings: gated, setup: seen("bob"), in: groupMsg("1", "alice", "hi"), decision: pipeline.DecisionGate, reason: "gated"},
		{name: "gated but mentioned", settings: gated, in: mentions(groupMsg("1", "alice", "hi")), decision: pipeline.DecisionEngage, reason: "mention"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s EngagementState
			if tt.setup != nil {
				tt.setup(&s)
			}
			env := envWith(time.Minute, tt.settings)
			s.See(env, tt.in)
			result, _ := s.Engage(env, tt.in, tt.turns)
			assert.Equal(t, tt.decision, result.Decision)
			assert.Equal(t, tt.reason, result.Reason)
		})
	}
}

// seen makes senders participants a minute before the message.
func seen(senders ...string) func(*EngagementState) {
	return func(s *EngagementState) {
		for _, who := range senders {
			s.See(envAt(0), groupMsg("s", who, "hi"))
		}
	}
}

func seenBot(name string) func(*EngagementState) {
	return func(s *EngagementState) {
		in := groupMsg("s", "bot-7", "hello")
		in.SenderName, in.SenderIsBot = name, true
		s.See(envAt(0), in)
	}
}

func withCredit(author string, others ...string) func(*EngagementState) {
	return func(s *EngagementState) {
		seen(others...)(s)
		s.GrantSticky(envAt(0), "t1", []pipeline.Inbound{groupMsg("s", author, "hi")}, "")
	}
}

// counted makes the chat's member count, fetched age before the message
// (a minute after the chat began), with others seen speaking.
func counted(humans int, age time.Duration, others ...string) func(*EngagementState) {
	return func(s *EngagementState) {
		seen(others...)(s)
		in := groupMsg("s", "alice", "hi")
		in.Membership = &pipeline.MembershipCount{Humans: humans, FetchedAt: t0.Add(time.Minute - age)}
		s.See(envAt(0), in)
	}
}

func mentions(in pipeline.Inbound) pipeline.Inbound { in.MentionsBot = true; return in }

func mentionsOthers(in pipeline.Inbound) pipeline.Inbound { in.MentionsOthers = true; return in }

func replyTo(in pipeline.Inbound, platformSaysBot bool) pipeline.Inbound {
	in.ReplyTo, in.ReplyToBot = "p1", platformSaysBot
	return in
}

func TestAnObservedMessageIsKeptCutAndBounded(t *testing.T) {
	var s EngagementState
	env := envWith(0, pipeline.Settings{Activation: pipeline.ActivationMention})
	big := groupMsg("1", "alice", strings.Repeat("é", maxObservedBytes))
	result, out := s.Engage(env, big, TurnFacts{})
	require.Equal(t, pipeline.DecisionObserve, result.Decision)
	assert.Empty(t, out)
	require.Len(t, s.Observed, 1)
	assert.LessOrEqual(t, len(s.Observed[0].Text), maxObservedBytes)
	assert.True(t, strings.HasSuffix(s.Observed[0].Text, "…"))

	for i := range pipeline.ContextBufferSize + 5 {
		s.Engage(env, groupMsg("m", "alice", "line "+string(rune('a'+i))), TurnFacts{})
	}
	assert.Len(t, s.Observed, pipeline.ContextBufferSize)
	assert.Equal(t, "line "+string(rune('a'+pipeline.ContextBufferSize+4)), s.Observed[pipeline.ContextBufferSize-1].Text)
	assert.Equal(t, pipeline.ContextBufferSize+6, s.Counts.Observed)
}

func TestEngagedTextCarriesTheObservedOnceAndTheChatsNotice(t *testing.T) {
	var s EngagementState
	seen("alice", "bob")(&s)
	s.observe(envAt(0), groupMsg("1", "bob", "lunch?"))
	env := envAt(time.Minute)

	text := s.EngagedText(env, "what time is it", true)
	assert.True(t, strings.HasPrefix(text, "## Recent context"), text)
	assert.Contains(t, text, "- bob: lunch?\n\n## Current message(s) (addressed to you)\nwhat time is it")
	assert.True(t, strings.HasSuffix(text, pipeline.GroupNudge), "two humans get the group nudge")
	assert.Equal(t, "again", s.EngagedText(env, "again", false), "the observed go with one turn; no nudge outside groups")

	s.LoopGuard.Active = true
	assert.Equal(t, "x\n\n"+pipeline.LoopGuardNotice, s.EngagedText(env, "x", true), "one notice a turn: the loop guard's wins")
}

func TestEngagedTextLeavesOutWhatIsOlderThanTheMaximumAge(t *testing.T) {
	var s EngagementState
	s.observe(envAt(0), groupMsg("1", "bob", "old news"))
	s.observe(envAt(50*time.Minute), groupMsg("2", "bob", "fresh"))
	text := s.EngagedText(envWith(time.Hour, pipeline.Settings{ObservedMaxAge: pipeline.Duration(30 * time.Minute)}), "hi", false)
	assert.NotContains(t, text, "old news")
	assert.Contains(t, text, "fresh")
}

func TestTheLoopGuardTripsAfterFivePeerBotTurnsAndAHumanResetsIt(t *testing.T) {
	var s EngagementState
	bot := mentions(groupMsg("b", "otherbot", "@bot ping"))
	bot.SenderIsBot = true
	for i := range pipeline.MaxPeerBotTurnsSinceHuman {
		assert.False(t, s.LoopGuard.Active, "turn %d", i)
		s.Engage(envAt(time.Duration(i)*time.Minute), bot, TurnFacts{})
	}
	assert.True(t, s.LoopGuard.Active)
	s.Engage(envAt(time.Hour), groupMsg("h", "alice", "hi"), TurnFacts{})
	assert.False(t, s.LoopGuard.Active)
}

func TestStickyCreditsAreSpentOnceAndExpire(t *testing.T) {
	tests := []struct {
		name     string
		after    time.Duration // from the grant to the follow-up
		decision pipeline.InboundDecision
	}{
		{name: "within the credit's life", after: pipeline.StickyTTL - time.Second, decision: pipeline.DecisionEngage},
		{name: "past it", after: pipeline.StickyTTL, decision: pipeline.DecisionObserve},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s EngagementState
			seen("alice", "bob")(&s)
			s.GrantSticky(envAt(0), "t1", []pipeline.Inbound{groupMsg("1", "alice", "hi")}, "th")
			result, _ := s.Engage(envAt(tt.after), groupMsg("2", "alice", "and?"), TurnFacts{})
			assert.Equal(t, tt.decision, result.Decision)
			again, _ := s.Engage(envAt(tt.after), groupMsg("3", "alice", "and?"), TurnFacts{})
			assert.Equal(t, pipeline.DecisionObserve, again.Decision, "a credit is spent by one follow-up")
		})
	}
}

func TestGrantStickyKeepsItsThreadsAndCreditsBounded(t *testing.T) {
	var s EngagementState
	for i := range maxBotThreads + 1 {
		s.GrantSticky(envAt(0), "t", nil, string(rune(0x100+i)))
	}
	assert.Len(t, s.BotThreads, maxBotThreads)
	assert.Equal(t, string(rune(0x101)), s.BotThreads[0], "the oldest thread is forgotten")

	for i := range maxParticipants + 5 {
		s.GrantSticky(envAt(time.Duration(i)*time.Millisecond), "t", []pipeline.Inbound{groupMsg("m", string(rune(0x100+i)), "hi")}, "th")
	}
	assert.Len(t, s.Sticky, maxParticipants)
	assert.True(t, s.Sticky.Has("web:"+string(rune(0x100+maxParticipants+4)), envAt(time.Second).Now), "the newest credit stays")

	s.GrantSticky(envAt(pipeline.StickyTTL+time.Minute), "t", []pipeline.Inbound{groupMsg("m", "alice", "hi")}, "th")
	assert.Len(t, s.Sticky, 1, "expired credits go with the next grant")
}

func TestDisengageDropsTheCreditsAndTheRunningTurnGrantsNone(t *testing.T) {
	alice := []pipeline.Inbound{groupMsg("1", "alice", "hi")}
	tests := []struct {
		name        string
		runningTurn string // when the agent disengaged
		replyTurn   string // the turn whose reply grants
		credited    bool
	}{
		{name: "disengaged during the turn", runningTurn: "t2", replyTurn: "t2", credited: false},
		{name: "disengaged between turns", runningTurn: "", replyTurn: "t2", credited: true},
		{name: "disengaged in an earlier turn", runningTurn: "t1", replyTurn: "t2", credited: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s EngagementState
			s.GrantSticky(envAt(0), "t0", alice, "")
			s.Disengage(envAt(time.Second), tt.runningTurn)
			assert.Empty(t, s.Sticky)
			s.GrantSticky(envAt(2*time.Second), tt.replyTurn, alice, "")
			assert.Equal(t, tt.credited, s.Sticky.Has("web:alice", envAt(3*time.Second).Now))
		})
	}
}
