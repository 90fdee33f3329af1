package models

import (
	"context"
	"errors"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/pipeline"
)

func fakes(t *testing.T) (*Registry, *modeltest.Server, *modeltest.Server) {
	oa, an := modeltest.NewOpenAI(), modeltest.NewAnthropic()
	t.Cleanup(oa.Close)
	t.Cleanup(an.Close)
	r := &Registry{
		MaxTokens:        256,
		OpenAIOptions:    []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")},
		AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithBaseURL(an.URL), anthropicopt.WithAPIKey("test")},
	}
	return r, oa, an
}

var prompt = Prompt{System: "be brief", Messages: []Message{{Role: "user", Text: "hi"}, {Role: "assistant", Text: "hello"}, {Role: "user", Text: "how are you"}}}

func TestProvidersSendThePromptAndReadTheReply(t *testing.T) {
	r, oa, an := fakes(t)
	for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
		m, err := r.Get(name)
		require.NoError(t, err)
		reply, err := m.Complete(context.Background(), prompt)
		require.NoError(t, err, name)
		assert.Equal(t, "echo: how are you", reply.Text, name)
		reqs := server.Requests()
		require.Len(t, reqs, 1, name)
		assert.Equal(t, "be brief", reqs[0].System, name)
		assert.Equal(t, []string{"user: hi", "assistant: hello", "user: how are you"}, reqs[0].Messages, name)
	}
}

func TestProviderErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name string
		step modeltest.Step
		want string
	}{
		{"rate limited", modeltest.Step{Status: 429, RetryAfter: "7", ErrorType: "rate_limit_error", Message: "slow down"}, pipeline.ErrRateLimited},
		{"out of quota", modeltest.Step{Status: 429, ErrorType: "insufficient_quota", Message: "You exceeded your current quota"}, pipeline.ErrBilling},
		{"overloaded", modeltest.Step{Status: 529, ErrorType: "overloaded_error", Message: "Overloaded"}, pipeline.ErrOverloaded},
		{"server error", modeltest.Step{Status: 500, ErrorType: "api_error", Message: "oops"}, pipeline.ErrOverloaded},
		{"bad key", modeltest.Step{Status: 401, ErrorType: "authentication_error", Message: "invalid x-api-key"}, pipeline.ErrAuth},
		{"no credit", modeltest.Step{Status: 400, ErrorType: "invalid_request_error", Message: "Your credit balance is too low"}, pipeline.ErrBilling},
		{"too long", modeltest.Step{Status: 400, ErrorType: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"}, pipeline.ErrContextOverflow},
		{"context length", modeltest.Step{Status: 400, ErrorType: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens"}, pipeline.ErrContextOverflow},
		{"filtered", modeltest.Step{Status: 400, ErrorType: "content_policy_violation", Message: "flagged by the safety system"}, pipeline.ErrContentFilter},
		{"no model", modeltest.Step{Status: 404, ErrorType: "not_found_error", Message: "model: nope"}, pipeline.ErrModelNotFound},
		{"bad request", modeltest.Step{Status: 400, ErrorType: "invalid_request_error", Message: "messages: field required"}, pipeline.ErrFormat},
		{"gateway timeout", modeltest.Step{Status: 504, Message: "upstream timed out"}, pipeline.ErrTimeout},
	}
	r, oa, an := fakes(t)
	for _, c := range cases {
		for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
			server.Push(c.step)
			m, _ := r.Get(name)
			_, err := m.Complete(context.Background(), prompt)
			var me *Error
			require.ErrorAs(t, err, &me, "%s %s", c.name, name)
			assert.Equal(t, c.want, me.Type, "%s %s: %v", c.name, name, err)
			if c.step.RetryAfter != "" {
				assert.Equal(t, 7*time.Second, me.RetryAfter, "%s %s", c.name, name)
			}
		}
	}
	assert.Len(t, oa.Requests(), len(cases), "the SDK's own retries are off: one request per call")
}

func TestContentFilterAndTransportFailures(t *testing.T) {
	r, oa, _ := fakes(t)
	oa.Push(modeltest.Step{FinishReason: "content_filter", Text: "x"})
	m, _ := r.Get("openai/gpt-test")
	_, err := m.Complete(context.Background(), prompt)
	var me *Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, pipeline.ErrContentFilter, me.Type)

	oa.Close()
	_, err = m.Complete(context.Background(), prompt)
	require.ErrorAs(t, err, &me)
	assert.Equal(t, pipeline.ErrTimeout, me.Type, "an unreachable provider is tried elsewhere")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Complete(ctx, prompt)
	assert.True(t, errors.Is(err, context.Canceled), "a cancelled turn is not a provider failure: %v", err)
}

func TestRegistryNames(t *testing.T) {
	r := &Registry{}
	m, err := r.Get("demo/echo")
	require.NoError(t, err)
	assert.Equal(t, DemoName, m.Name())
	for _, bad := range []string{"gpt-4o", "mystery/model", "openai/"} {
		_, err := r.Get(bad)
		var me *Error
		require.ErrorAs(t, err, &me, bad)
		assert.Equal(t, pipeline.ErrModelNotFound, me.Type)
	}
}

func TestToolCallsAndResultsRoundTrip(t *testing.T) {
	r, oa, an := fakes(t)
	tools := []Tool{{Name: "get_weather", Description: "weather by city", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}
	for name, server := range map[string]*modeltest.Server{"openai/gpt-test": oa, "anthropic/claude-test": an} {
		server.Push(modeltest.Step{Text: "let me look", ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}})
		m, _ := r.Get(name)
		got, err := m.Complete(context.Background(), Prompt{Messages: []Message{{Role: "user", Text: "weather in Oslo?"}}, Tools: tools})
		require.NoError(t, err, name)
		require.Len(t, got.ToolCalls, 1, name)
		assert.Equal(t, pipeline.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, got.ToolCalls[0], name)

		next := Prompt{Tools: tools, Messages: []Message{
			{Role: "user", Text: "weather in Oslo?"},
			{Role: "assistant", Text: got.Text, ToolCalls: got.ToolCalls},
			{Role: "tool", ToolCallID: "call_1", Text: `{"temp":-3}`},
		}}
		final, err := m.Complete(context.Background(), next)
		require.NoError(t, err, name)
		assert.Equal(t, "echo: weather in Oslo?", final.Text, name)
	}
	last := oa.Requests()[len(oa.Requests())-1]
	assert.Equal(t, []string{"user: weather in Oslo?", "assistant: let me look", `tool: {"temp":-3}`}, last.Messages)
}

func TestImagesGoAsImageContentToBothProviders(t *testing.T) {
	r, oa, an := fakes(t)
	img := Image{MimeType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")}
	p := Prompt{Messages: []Message{{Role: "user", Text: "what is this?", Images: []Image{img}}}}
	want := []string{"data:image/png;base64,iVBORw0KGgpmYWtl"}
	for name, server := range map[string]*modeltest.Server{"openai/gpt-4o": oa, "anthropic/claude-sonnet-4-5": an} {
		m, err := r.Get(name)
		require.NoError(t, err)
		_, err = m.Complete(context.Background(), p)
		require.NoError(t, err, name)
		reqs := server.Requests()
		require.Len(t, reqs, 1, name)
		assert.Equal(t, want, reqs[0].Images, name)
		assert.Equal(t, []string{"user: what is this?"}, reqs[0].Messages, name)
	}
}

func TestPDFsGoAsDocumentContentToBothProviders(t *testing.T) {
	r, oa, an := fakes(t)
	pdf := []byte("%PDF-1.4\nfake pdf body")
	p := Prompt{Messages: []Message{{Role: "user", Text: "summarise this", Documents: []Document{{Name: "report.pdf", MimeType: "application/pdf", Data: pdf}}}}}
	for name, c := range map[string]struct {
		server *modeltest.Server
		part   string
	}{"openai/gpt-4o": {oa, "file"}, "anthropic/claude-sonnet-4-5": {an, "document"}} {
		m, err := r.Get(name)
		require.NoError(t, err)
		_, err = m.Complete(context.Background(), p)
		require.NoError(t, err, name)
		reqs := c.server.Requests()
		require.Len(t, reqs, 1, name)
		assert.Equal(t, []modeltest.Document{{Name: "report.pdf", MediaType: "application/pdf", Data: pdf, Part: c.part}}, reqs[0].Documents, name)
		assert.Equal(t, []string{"user: summarise this"}, reqs[0].Messages, name)
	}
}

func TestReadsPDFsByFamily(t *testing.T) {
	for name, want := range map[string]bool{
		"openai/gpt-4o": true, "openai/gpt-4.1-mini": true, "openai/o4-mini": true, "openai/gpt-5": true,
		"anthropic/claude-sonnet-4-5": true, "anthropic/claude-3-5-sonnet-20241022": true, "anthropic/claude-3-7-sonnet-latest": true,
		"anthropic/claude-3-opus-20240229": false, "anthropic/claude-3-5-sonnet-20240620": false, "anthropic/claude-2.1": false,
		"openai/llama3": false, "demo/echo": false, "nonsense": false,
	} {
		assert.Equal(t, want, ReadsPDFs(name), name)
	}
}
