package models

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestEachThinkLevelReachesEachProviderAsItsOwnParameter(t *testing.T) {
	cases := []struct {
		level  pipeline.ThinkLevel
		effort string
		budget int
	}{
		{"", "", 0},
		{pipeline.ThinkOff, "", 0},
		{pipeline.ThinkLow, "low", 1024},
		{pipeline.ThinkMedium, "medium", 4096},
		{pipeline.ThinkHigh, "high", 16384},
	}
	for _, c := range cases {
		r, oa, an := fakes(t)
		p := prompt
		p.Think = c.level
		for name, server := range map[string]*modeltest.Server{"openai/o-test": oa, "anthropic/claude-test": an} {
			m, err := r.Get(name)
			require.NoError(t, err)
			reply, err := m.Complete(context.Background(), p)
			require.NoError(t, err, name)
			assert.False(t, reply.ThinkIgnored, "%s takes a reasoning effort", name)
			req := server.Requests()[0]
			if name == "openai/o-test" {
				assert.Equal(t, c.effort, req.ReasoningEffort, "%s at %q", name, c.level)
				assert.Equal(t, 256, req.MaxTokens)
				continue
			}
			assert.Equal(t, c.budget, req.ThinkingBudget, "%s at %q", name, c.level)
			assert.Equal(t, 256+c.budget, req.MaxTokens, "max_tokens must exceed the thinking budget, and the answer keeps its room")
		}
	}
}

func TestAnthropicThinksNotInAStepAfterToolCalls(t *testing.T) {
	r, _, an := fakes(t)
	m, err := r.Get("anthropic/claude-test")
	require.NoError(t, err)
	p := Prompt{Think: pipeline.ThinkHigh, Messages: []Message{
		{Role: "user", Text: "weather?"},
		{Role: "assistant", ToolCalls: []pipeline.ToolCall{{ID: "t1", Name: "lookup", Arguments: `{}`}}},
		{Role: "tool", ToolCallID: "t1", Text: "sunny"},
	}}
	_, err = m.Complete(context.Background(), p)
	require.NoError(t, err)
	assert.Zero(t, an.Requests()[0].ThinkingBudget, "the earlier step's thinking blocks are not kept, which Anthropic would want back")
}

func TestThinkingBlocksStayOutOfTheReply(t *testing.T) {
	r, _, an := fakes(t)
	an.Push(modeltest.Step{Thinking: "let me see: 2+2 is 4", Text: "4"})
	m, err := r.Get("anthropic/claude-test")
	require.NoError(t, err)
	p := prompt
	p.Think = pipeline.ThinkLow
	reply, err := m.Complete(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "4", reply.Text)
}

func TestUsageAndCostComeBackWhereTheProviderGivesThem(t *testing.T) {
	r, oa, an := fakes(t)
	cost := 0.00042
	oa.Push(modeltest.Step{InputTokens: 120, OutputTokens: 30, Cost: &cost}, modeltest.Step{InputTokens: 5, OutputTokens: 6})
	an.Push(modeltest.Step{InputTokens: 70, OutputTokens: 9})
	openaiModel, err := r.Get("openai/gpt-test")
	require.NoError(t, err)
	reply, err := openaiModel.Complete(context.Background(), prompt)
	require.NoError(t, err)
	assert.Equal(t, pipeline.Usage{InputTokens: 120, OutputTokens: 30, CostUSD: 0.00042, HasCost: true}, reply.Usage, "OpenRouter's usage.cost")
	reply, err = openaiModel.Complete(context.Background(), prompt)
	require.NoError(t, err)
	assert.Equal(t, pipeline.Usage{InputTokens: 5, OutputTokens: 6}, reply.Usage, "no cost field: no cost")
	anthropicModel, err := r.Get("anthropic/claude-test")
	require.NoError(t, err)
	reply, err = anthropicModel.Complete(context.Background(), prompt)
	require.NoError(t, err)
	assert.Equal(t, pipeline.Usage{InputTokens: 70, OutputTokens: 9}, reply.Usage)
}

func TestTheDemoModelSaysItTakesNoReasoningEffort(t *testing.T) {
	p := prompt
	reply, err := Demo{}.Complete(context.Background(), p)
	require.NoError(t, err)
	assert.False(t, reply.ThinkIgnored)
	p.Think = pipeline.ThinkMedium
	reply, err = Demo{}.Complete(context.Background(), p)
	require.NoError(t, err)
	assert.True(t, reply.ThinkIgnored)
	assert.Zero(t, reply.Usage, "the demo reports no usage rather than a guess")
}
