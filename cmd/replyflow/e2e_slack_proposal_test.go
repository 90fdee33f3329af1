package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// buttonValues are the values of the buttons in a message's blocks.
func buttonValues(t *testing.T, blocks json.RawMessage) []string {
	t.Helper()
	var parsed []struct {
		Elements []struct {
			Value string `json:"value"`
		} `json:"elements"`
	}
	require.NoError(t, json.Unmarshal(blocks, &parsed))
	var values []string
	for _, b := range parsed {
		for _, e := range b.Elements {
			values = append(values, e.Value)
		}
	}
	return values
}

// A proposal on Slack is Block Kit with Approve and Reject buttons. A press
// by someone not allowed is refused to them alone (an ephemeral message)
// and changes nothing; the owner's press runs the tool once, and the
// proposal is updated to say who decided, without its buttons.
func TestSlackProposalApprovedByButtonAndRefusedToANonOwner(t *testing.T) {
	t.Parallel()
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.Owners = []string{"slack:U0BOSS"}
	s, fake := startSlackStack(t, cfg)
	s.startWorker(payingModel{})
	channel := uniqueSlackChannel("C")
	fake.AddChannel(slacktest.Channel{ID: channel, Members: 4})

	post, events := fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Text: "<@" + fake.BotUserID + "> pay bob 5"})
	for _, ev := range events {
		fake.SendEvent(ev)
	}
	var proposal slacktest.Message
	waitForSlack(t, fake, "the proposal with buttons", func() bool {
		for _, m := range fake.Thread(channel, post.TS) {
			if m.User == fake.BotUserID && len(m.Blocks) > 0 {
				proposal = m
				return true
			}
		}
		return false
	})
	assert.Contains(t, proposal.Text, "Approval needed")
	values := buttonValues(t, proposal.Blocks)
	require.Len(t, values, 2)
	require.True(t, strings.HasPrefix(values[0], "approve:"), "the first button approves: %v", values)
	waitForSlack(t, fake, "⏳ on the request while it waits", func() bool {
		r := fake.Reactions(channel, post.TS)
		return len(r) > 0 && r[len(r)-1] == "hourglass_flowing_sand"
	})

	pressBy := func(user string) string {
		return fake.SendInteractive(fake.BlockActions(slacktest.BlockAction{
			Channel: channel, User: user, MessageTS: proposal.TS, ThreadTS: post.TS,
			ActionID: values[0], BlockID: "replyflow_actions", Value: values[0],
		}))
	}
	refused := pressBy("U0MALLORY")
	waitForSlack(t, fake, "the refusal, to Mallory alone", func() bool { return len(fake.Ephemerals(channel)) > 0 })
	eph := fake.Ephemerals(channel)
	require.Len(t, eph, 1)
	assert.Equal(t, "U0MALLORY", eph[0].User)
	assert.Equal(t, post.TS, eph[0].ThreadTS, "in the proposal's thread")
	assert.Contains(t, eph[0].Text, "slack:U0MALLORY is not allowed to decide")
	assert.True(t, fake.Acked(refused), "the refused press was acknowledged")
	assert.Zero(t, calls.Load(), "a refused press runs nothing")
	for _, m := range fake.Thread(channel, post.TS) {
		assert.NotContains(t, m.Text, "not allowed", "the refusal is not shown to the channel")
	}

	approved := pressBy("U0BOSS")
	waitForSlack(t, fake, "the tool's result", func() bool {
		thread := fake.Thread(channel, post.TS)
		return strings.HasPrefix(thread[len(thread)-1].Text, "done:")
	})
	assert.True(t, fake.Acked(approved))
	assert.Equal(t, int32(1), calls.Load(), "an approved tool runs exactly once")
	waitForSlack(t, fake, "the proposal updated", func() bool {
		m, _ := fake.Message(channel, proposal.TS)
		return m.Edits > 0
	})
	edited, _ := fake.Message(channel, proposal.TS)
	assert.Contains(t, edited.Text, "Approved by slack:U0BOSS")
	assert.Empty(t, buttonValues(t, nonNullBlocks(edited.Blocks)), "a decided proposal loses its buttons")
	waitForSlack(t, fake, "the request's reaction cleared", func() bool { return len(fake.Reactions(channel, post.TS)) == 0 })
	recordHistoryOf(t, s.client, pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: channel}, "slack_proposal")
}

// nonNullBlocks is blocks, or an empty list where a message has none.
func nonNullBlocks(blocks json.RawMessage) json.RawMessage {
	if len(blocks) == 0 {
		return json.RawMessage("[]")
	}
	return blocks
}

// TestSlackOwnerApprovesAnotherSendersProposalInAPerSenderChannel is a
// channel where each sender has a session of their own: Alice's call and
// the owner's own both wait as p1. The owner presses Approve on Alice's
// proposal: Alice's call runs, in her thread, and the owner's own p1, in
// the owner's session, still waits with its buttons.
func TestSlackOwnerApprovesAnotherSendersProposalInAPerSenderChannel(t *testing.T) {
	t.Parallel()
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.Owners = []string{"slack:U0BOSS"}
	cfg.SessionScope = "per-sender"
	s, fake := startSlackStack(t, cfg)
	s.startWorker(payingModel{})
	channel := uniqueSlackChannel("C")
	fake.AddChannel(slacktest.Channel{ID: channel, Members: 4})

	asked := map[string]slacktest.Message{}     // each sender's request
	proposals := map[string]slacktest.Message{} // and the proposal in its thread
	for _, user := range []string{"U0ALICE", "U0BOSS"} {
		post, events := fake.AddMessage(slacktest.Post{Channel: channel, User: user, Text: "<@" + fake.BotUserID + "> pay bob 5"})
		for _, ev := range events {
			fake.SendEvent(ev)
		}
		asked[user] = post
		waitForSlack(t, fake, user+"'s proposal", func() bool {
			for _, m := range fake.Thread(channel, post.TS) {
				if m.User == fake.BotUserID && len(m.Blocks) > 0 {
					proposals[user] = m
					return true
				}
			}
			return false
		})
		assert.Contains(t, proposals[user].Text, "Approval needed [p1]", "each sender's session numbers its own proposals")
	}

	values := buttonValues(t, proposals["U0ALICE"].Blocks)
	require.Len(t, values, 2)
	assert.Equal(t, "approve:p1@U0ALICE", values[0], "Alice's buttons name her session")
	pressed := fake.SendInteractive(fake.BlockActions(slacktest.BlockAction{
		Channel: channel, User: "U0BOSS", MessageTS: proposals["U0ALICE"].TS, ThreadTS: asked["U0ALICE"].TS,
		ActionID: values[0], BlockID: "replyflow_actions", Value: values[0],
	}))
	done := func(user string) bool {
		for _, m := range fake.Thread(channel, asked[user].TS) {
			if strings.HasPrefix(m.Text, "done:") {
				return true
			}
		}
		return false
	}
	waitForSlack(t, fake, "a call's result", func() bool { return done("U0ALICE") || done("U0BOSS") })
	assert.False(t, done("U0BOSS"), "the owner's own p1 did not run")
	require.True(t, done("U0ALICE"), "Alice's call ran")
	assert.True(t, fake.Acked(pressed))
	assert.Equal(t, int32(1), calls.Load(), "one call ran")
	waitForSlack(t, fake, "Alice's proposal updated", func() bool {
		m, _ := fake.Message(channel, proposals["U0ALICE"].TS)
		return m.Edits > 0
	})
	edited, _ := fake.Message(channel, proposals["U0ALICE"].TS)
	assert.Contains(t, edited.Text, "Approved by slack:U0BOSS [p1]")
	owners, _ := fake.Message(channel, proposals["U0BOSS"].TS)
	assert.Zero(t, owners.Edits, "the owner's own proposal is untouched")
	assert.Equal(t, workflows.StatusWaitingUser, s.stateOf(pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: channel, Sender: "U0BOSS"}).Status,
		"the owner's own p1 still waits")
}
