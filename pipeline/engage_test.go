package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEngageLadder(t *testing.T) {
	aliases := []string{"Ada", "assistant"}
	cases := []struct {
		name   string
		in     EngageInput
		want   InboundDecision
		reason string
		spend  bool
	}{
		{"dm", EngageInput{DM: true, EffectiveHumans: 5}, DecisionEngage, "dm", false},
		{"mention", EngageInput{MentionsBot: true, MentionsOthers: true, EffectiveHumans: 5}, DecisionEngage, "mention", false},
		{"reply to bot", EngageInput{ReplyToBot: true, EffectiveHumans: 5}, DecisionEngage, "reply_to_bot", false},
		{"sticky", EngageInput{HasStickyCredit: true, EffectiveHumans: 5}, DecisionEngage, "sticky", true},
		{"sticky but aimed at someone else in a group keeps the credit",
			EngageInput{HasStickyCredit: true, MentionsOthers: true, EffectiveHumans: 3}, DecisionObserve, "sticky_targets_other", false},
		{"sticky aimed at a peer bot by name in a group", EngageInput{HasStickyCredit: true, TextTargetsPeerBot: true, EffectiveHumans: 2}, DecisionObserve, "sticky_targets_other", false},
		{"sticky aimed elsewhere but naming us engages",
			EngageInput{HasStickyCredit: true, MentionsOthers: true, EffectiveHumans: 3, Text: "ada and bob, look", Aliases: aliases}, DecisionEngage, "sticky", true},
		{"sticky in a solo-human chat ignores the suppressors", EngageInput{HasStickyCredit: true, MentionsOthers: true, EffectiveHumans: 1}, DecisionEngage, "sticky", true},
		{"alias, case-insensitive substring", EngageInput{Text: "hey ADAm?", Aliases: aliases, EffectiveHumans: 4}, DecisionEngage, "alias", false},
		{"two bots addressed by alias: each engages", EngageInput{Text: "Ada and Bob, both of you", Aliases: aliases, MentionsOthers: true, EffectiveHumans: 4}, DecisionEngage, "alias", false},
		{"mentions others suppresses the fallback", EngageInput{MentionsOthers: true, EffectiveHumans: 1}, DecisionObserve, "suppressed", false},
		{"reply to another human suppresses", EngageInput{ReplyToOther: true, EffectiveHumans: 1}, DecisionObserve, "suppressed", false},
		{"reply in a thread the bot is in does not", EngageInput{ReplyToOther: true, BotInThread: true, EffectiveHumans: 1}, DecisionEngage, "solo_human", false},
		{"peer bot named suppresses", EngageInput{TextTargetsPeerBot: true, EffectiveHumans: 1}, DecisionObserve, "suppressed", false},
		{"solo human", EngageInput{EffectiveHumans: 1}, DecisionEngage, "solo_human", false},
		{"a second human switches the fallback off", EngageInput{EffectiveHumans: 2}, DecisionObserve, "default", false},
		{"peer bots never ride the fallback", EngageInput{AuthorIsBot: true, EffectiveHumans: 1}, DecisionObserve, "default", false},
		{"peer bots still engage by mention", EngageInput{AuthorIsBot: true, MentionsBot: true}, DecisionEngage, "mention", false},
		{"mention mode: no fallback", EngageInput{Activation: ActivationMention, EffectiveHumans: 1}, DecisionObserve, "not_addressed", false},
		{"mention mode: alias engages", EngageInput{Activation: ActivationMention, Text: "ada?", Aliases: aliases}, DecisionEngage, "alias", false},
		{"gated: triggers bypass the gate", EngageInput{Activation: ActivationGated, ReplyToBot: true}, DecisionEngage, "reply_to_bot", false},
		{"gated: the rest goes to the gate", EngageInput{Activation: ActivationGated, EffectiveHumans: 1}, DecisionGate, "gated", false},
		{"always", EngageInput{Activation: ActivationAlways, AuthorIsBot: true, EffectiveHumans: 9}, DecisionEngage, "always", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DecideEngagement(c.in)
			assert.Equal(t, EngageResult{Decision: c.want, Reason: c.reason, ConsumeCredit: c.spend}, got)
		})
	}
}

func FuzzDecideEngagement(f *testing.F) {
	f.Add(uint16(0), 1, "hello ada", "smart")
	f.Add(uint16(0xffff), 3, "", "gated")
	f.Fuzz(func(t *testing.T, bits uint16, humans int, text, activation string) {
		b := func(i uint) bool { return bits&(1<<i) != 0 }
		in := EngageInput{Activation: activation, DM: b(0), MentionsBot: b(1), ReplyToBot: b(2), MentionsOthers: b(3), ReplyToOther: b(4),
			BotInThread: b(5), TextTargetsPeerBot: b(6), AuthorIsBot: b(7), HasStickyCredit: b(8), EffectiveHumans: humans, Text: text, Aliases: []string{"ada"}}
		got := DecideEngagement(in)
		switch got.Decision {
		case DecisionEngage, DecisionObserve, DecisionGate:
		default:
			t.Fatalf("the ladder returned %q for %+v", got.Decision, in)
		}
		if got.ConsumeCredit && (!in.HasStickyCredit || got.Decision != DecisionEngage) {
			t.Fatalf("a credit was spent without engaging on it: %+v -> %+v", in, got)
		}
	})
}

func TestStickyLedgerIsOneShotAndExpires(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var l StickyLedger
	l = l.Grant([]string{"alice", "bob"}, now, StickyTTL)
	assert.True(t, l.Has("alice", now.Add(14*time.Minute)))
	assert.False(t, l.Has("alice", now.Add(15*time.Minute)), "expired after 15 minutes")
	l = l.Consume("alice", now.Add(time.Minute))
	assert.False(t, l.Has("alice", now.Add(time.Minute)), "one-shot")
	assert.True(t, l.Has("bob", now.Add(time.Minute)))
	l = l.Grant([]string{"bob"}, now.Add(10*time.Minute), StickyTTL)
	assert.True(t, l.Has("bob", now.Add(20*time.Minute)), "a new reply re-grants")
	assert.Len(t, l.Consume("nobody", now.Add(30*time.Minute)), 0, "expired credits are dropped")
}

func TestEffectiveHumans(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, 3, EffectiveHumans(3, nil, now))
	assert.Equal(t, 1, EffectiveHumans(3, &MembershipCount{Humans: 1, FetchedAt: now.Add(-10 * time.Second)}, now), "fresh and complete is ground truth")
	assert.Equal(t, 3, EffectiveHumans(3, &MembershipCount{Humans: 1, Truncated: true, FetchedAt: now}, now), "truncated: the larger")
	assert.Equal(t, 7, EffectiveHumans(3, &MembershipCount{Humans: 7, FetchedAt: now.Add(-time.Hour)}, now), "stale: the larger")
}

func TestLoopGuardTripsAndClears(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var g LoopGuard
	for i := range 4 {
		g = g.Observe(true, true, now.Add(time.Duration(i)*time.Minute))
	}
	assert.False(t, g.Active, "4 spread-out peer-bot turns")
	g = g.Observe(true, false, now.Add(5*time.Minute))
	assert.False(t, g.Active, "an observed (not engaged) bot message does not count")
	g = g.Observe(true, true, now.Add(6*time.Minute))
	assert.True(t, g.Active, "5 in a row since the last human")
	assert.Equal(t, LoopGuardNotice, TurnNotice(g, 3), "one silence notice: the nudge is absent when the guard fired")
	g = g.Observe(false, true, now.Add(7*time.Minute))
	assert.False(t, g.Active, "a human clears it")
	assert.Equal(t, GroupNudge, TurnNotice(g, 3))
	assert.Equal(t, "", TurnNotice(g, 1))

	var burst LoopGuard
	for i := range 5 {
		burst = burst.Observe(true, true, now.Add(time.Duration(i)*10*time.Second))
	}
	assert.True(t, burst.Active, "5 within 60 s")
}

func TestObservedContextBuffer(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var buf []Observed
	for i := range 25 {
		buf = ObserveMessage(buf, Observed{Sender: "bob", Text: string(rune('a' + i)), At: now.Add(time.Duration(i-25) * time.Hour)})
	}
	assert.Len(t, buf, ContextBufferSize, "oldest trimmed past 20")
	assert.Equal(t, "f", buf[0].Text)
	got := RenderObserved(buf, now, 6*time.Hour)
	assert.Equal(t, "## Recent context (not addressed to you, for awareness only)\n- bob: t\n- bob: u\n- bob: v\n- bob: w\n- bob: x\n- bob: y", got,
		"messages older than 6 h are left out")
	assert.Equal(t, "", RenderObserved(buf, now.Add(24*time.Hour), 6*time.Hour))
	assert.True(t, Allowed("webchat:alice", []string{"telegram:1", "webchat:alice"}))
	assert.True(t, Allowed("anyone:x", []string{"*"}))
	assert.False(t, Allowed("webchat:bob", []string{"webchat:alice"}))
}
