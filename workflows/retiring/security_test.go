package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func from(sender string, in pipeline.Inbound) pipeline.Inbound {
	in.SenderID = sender
	return in
}

func verifiedOwner(in pipeline.Inbound) pipeline.Inbound {
	in.SenderIsOwner = true
	return in
}

func TestModelCommandPicksOnlyTheChainOrTheAllowListUnlessTheSenderIsAnOwner(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.Models = []string{"demo/echo", "openai/gpt-4o-mini"}
		p.settings.ModelAllow = []string{"anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"}
	})
	signalAt(env, time.Second, inbound("c1", "/model openai/o3-pro"))
	signalAt(env, 2*time.Second, inbound("c2", "/model anthropic/claude-haiku-4-5"))
	signalAt(env, 3*time.Second, from("boss", inbound("c3", "/model openai/o3-pro")))
	signalAt(env, 4*time.Second, verifiedOwner(from("carol", inbound("c4", "/model anthropic/claude-opus-4-1"))))
	run(t, env, nil)

	require.Len(t, p.sent, 4)
	assert.Equal(t, "⚠️ /model may choose only demo/echo, openai/gpt-4o-mini, anthropic/claude-haiku-4-5 here; owners may choose any model.", p.sent[0].Text,
		"a stranger cannot pick a model outside the chain and the allow list; each model is named once")
	assert.Contains(t, p.sent[1].Text, "Model for this chat: anthropic/claude-haiku-4-5", "an allowed model")
	assert.Contains(t, p.sent[2].Text, "Model for this chat: openai/o3-pro", "a configured owner picks any model")
	assert.Contains(t, p.sent[3].Text, "Model for this chat: anthropic/claude-opus-4-1", "so does an owner the adapter verified")
	overrides := make([]string, 0, len(p.saved))
	for _, s := range p.saved {
		overrides = append(overrides, s.ModelOverride)
	}
	assert.Equal(t, []string{"", "anthropic/claude-haiku-4-5", "openai/o3-pro", "anthropic/claude-opus-4-1"}, overrides,
		"the refused choice changed nothing")
}

func TestOwnerVerifiedByTheAdapterMayChangeTheActivationAndNoOneElse(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, from("mallory", inbound("c1", "/activation always")))
	signalAt(env, 2*time.Second, verifiedOwner(from("carol", inbound("c2", "/activation mention"))))
	run(t, env, nil)

	require.Len(t, p.sent, 2)
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", p.sent[0].Text)
	assert.Equal(t, "Activation for this chat: mention.", p.sent[1].Text)
}

func TestOnlyAnOwnerDecidesAProposalAndAVerifiedOwnerIsOne(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{pay}))
	signalAt(env, time.Second, inbound("m1", "pay bob 100"))
	signalAt(env, time.Minute, press("b1", "approve:p1", "mallory"))
	signalAt(env, 2*time.Minute, from("mallory", inbound("c1", "/approve p1")))
	refused := queryStateAt(t, env, 3*time.Minute)
	signalAt(env, time.Hour, verifiedOwner(press("b2", "approve:p1", "carol")))
	run(t, env, nil)

	require.Len(t, refused.Proposals, 1)
	assert.Equal(t, ProposalPending, refused.Proposals[0].Status, "neither a press nor a command of a stranger decides")
	assert.Equal(t, []pipeline.ToolCall{pay}, p.tools, "the verified owner's approval ran the tool, once")
	require.Len(t, p.edits, 1)
	assert.Contains(t, p.edits[0].Text, "Approved by webchat:carol")
	var refusals int
	for _, text := range p.replies() {
		if text == "⚠️ webchat:mallory is not allowed to decide proposal p1: only owners may" {
			refusals++
		}
	}
	assert.Equal(t, 2, refusals, "the press and the command were each refused with the reason")
}

// SenderIsOwner only says what an adapter verified; a run that started
// before changeSecurity does not know it and must not act on it.
func TestAVerifiedOwnerIsNotAnOwnerInARunFromBeforeTheChange(t *testing.T) {
	env, p := newEnv(t)
	runsFromBefore(env, changeSecurity)
	signalAt(env, time.Second, verifiedOwner(from("carol", inbound("c1", "/activation mention"))))
	signalAt(env, 2*time.Second, inbound("c2", "/model openai/o3-pro"))
	run(t, env, nil)

	require.Len(t, p.sent, 2)
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", p.sent[0].Text)
	assert.Contains(t, p.sent[1].Text, "Model for this chat: openai/o3-pro", "before the change, /model took any model")
}
