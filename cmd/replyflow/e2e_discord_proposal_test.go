package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// A proposal on Discord is a message with Approve and Reject buttons. A
// press by someone not allowed is answered (the gateway answers every
// press Temporal accepted) and refused to the presser alone, an
// ephemeral follow-up through the interaction's token, and changes
// nothing; the owner's press runs the tool once, and the proposal is
// edited to say who decided, without its buttons.
func TestDiscordProposalApprovedByButtonAndRefusedToANonOwner(t *testing.T) {
	t.Parallel()
	const boss, mallory = "100000000000000021", "100000000000000022"
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.Owners = []string{"discord:" + boss}
	s := startDiscordStack(t, cfg)
	s.startWorker(payingModel{})
	channel := s.newChannel()

	post := s.mention(channel, discordAlice, "pay bob 5")
	var proposal discordtest.Message
	waitForDiscord(t, s.fake, "the proposal with buttons", func() bool {
		for _, m := range s.fake.Sent(channel) {
			if len(m.Buttons) > 0 {
				proposal = m
				return true
			}
		}
		return false
	})
	assert.Contains(t, proposal.Content, "Approval needed")
	assert.Equal(t, post.ID, proposal.Reply, "the proposal answers the request")
	require.Len(t, proposal.Buttons, 2)
	approve := proposal.Buttons[0].CustomID
	require.True(t, strings.HasPrefix(approve, "approve:"), "the first button approves: %+v", proposal.Buttons)
	waitForDiscord(t, s.fake, "⏳ on the request while it waits", func() bool {
		return slices.Equal(s.fake.Reactions(channel, post.ID), []string{pipeline.ReactionWaitingUser.Emoji()})
	})

	press := func(user string) discordtest.Interaction {
		return s.fake.Press(discordtest.Press{Channel: channel, Message: proposal.ID, User: user, CustomID: approve})
	}
	refused := press(mallory)
	waitForDiscord(t, s.fake, "the refusal, to Mallory alone", func() bool { return len(s.fake.Ephemerals(channel)) > 0 })
	eph := s.fake.Ephemerals(channel)
	require.Len(t, eph, 1)
	assert.Equal(t, mallory, eph[0].User)
	assert.Equal(t, refused.ID, eph[0].Interaction, "a follow-up of Mallory's press")
	assert.Contains(t, eph[0].Content, "discord:"+mallory+" is not allowed to decide")
	assertDeferredUpdate(t, s.fake, refused)
	assert.Zero(t, calls.Load(), "a refused press runs nothing")
	for _, m := range s.fake.Messages(channel) {
		assert.NotContains(t, m.Content, "not allowed", "the refusal is not shown to the channel")
	}
	unchanged, _ := s.fake.Message(channel, proposal.ID)
	assert.Zero(t, unchanged.Edits, "the proposal is as it was")
	assert.Len(t, unchanged.Buttons, 2)

	approved := press(boss)
	waitForDiscord(t, s.fake, "the tool's result", func() bool {
		sent := s.fake.Sent(channel)
		return strings.HasPrefix(sent[len(sent)-1].Content, "done:")
	})
	assertDeferredUpdate(t, s.fake, approved)
	assert.Equal(t, int32(1), calls.Load(), "an approved tool runs exactly once")
	waitForDiscord(t, s.fake, "the proposal edited", func() bool {
		m, _ := s.fake.Message(channel, proposal.ID)
		return m.Edits > 0
	})
	edited, _ := s.fake.Message(channel, proposal.ID)
	assert.Contains(t, edited.Content, "Approved by discord:"+boss)
	assert.Empty(t, edited.Buttons, "a decided proposal loses its buttons")
	assert.Len(t, s.fake.Ephemerals(channel), 1, "the owner is told nothing privately")
	waitForDiscord(t, s.fake, "the request's reaction cleared", func() bool { return len(s.fake.Reactions(channel, post.ID)) == 0 })
	recordHistoryOf(t, s.client, s.key(channel), "discord_proposal")
}

// assertDeferredUpdate checks that the press was answered once, with a
// deferred update (type 6): the message stays as it is until the worker
// edits it.
func assertDeferredUpdate(t *testing.T, fake *discordtest.Server, it discordtest.Interaction) {
	t.Helper()
	answers := fake.Responses(it.ID)
	require.Len(t, answers, 1, "the press is answered once")
	assert.Equal(t, 6, answers[0].Type, "a deferred update")
}
