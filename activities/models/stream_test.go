package models

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestProvidersStreamTheTextAsItIsWritten(t *testing.T) {
	r, oa, an := fakes(t)
	for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
		server.Push(modeltest.Step{Text: "one two three four", TokenDelay: 5 * time.Millisecond, InputTokens: 7, OutputTokens: 4})
		m, err := r.Get(name)
		require.NoError(t, err)
		var seen []string
		got, err := m.(Streamer).Stream(context.Background(), prompt, func(text string) { seen = append(seen, text) })
		require.NoError(t, err, name)
		assert.Equal(t, []string{"one ", "one two ", "one two three ", "one two three four"}, seen, name)
		assert.Equal(t, "one two three four", got.Text, name)
		assert.Equal(t, pipeline.Usage{InputTokens: 7, OutputTokens: 4}, got.Usage, name)
	}
}

func TestProvidersStreamToolCalls(t *testing.T) {
	r, oa, an := fakes(t)
	for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
		server.Push(modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}}})
		m, err := r.Get(name)
		require.NoError(t, err)
		got, err := m.(Streamer).Stream(context.Background(), prompt, func(string) { t.Error("no text was written") })
		require.NoError(t, err, name)
		require.Len(t, got.ToolCalls, 1, name)
		assert.Equal(t, pipeline.ToolCall{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}, got.ToolCalls[0], name)
	}
}

func TestAStreamBrokenMidAnswerIsATimeoutAfterItsText(t *testing.T) {
	r, oa, an := fakes(t)
	for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
		server.Push(modeltest.Step{Text: "one two three four", BreakAfter: 2})
		m, err := r.Get(name)
		require.NoError(t, err)
		last := ""
		_, err = m.(Streamer).Stream(context.Background(), prompt, func(text string) { last = text })
		var me *Error
		require.True(t, errors.As(err, &me), "%s: %v", name, err)
		assert.Equal(t, pipeline.ErrTimeout, me.Type, name)
		assert.Equal(t, "one two ", last, name)
	}
}

func TestAStreamRefusedUpFrontIsClassifiedAsComplete(t *testing.T) {
	r, oa, an := fakes(t)
	for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
		server.Push(modeltest.Step{Status: 529, ErrorType: "overloaded_error", Message: "Overloaded"})
		m, err := r.Get(name)
		require.NoError(t, err)
		_, err = m.(Streamer).Stream(context.Background(), prompt, func(string) {})
		var me *Error
		require.True(t, errors.As(err, &me), "%s: %v", name, err)
		assert.Equal(t, pipeline.ErrOverloaded, me.Type, name)
	}
}
