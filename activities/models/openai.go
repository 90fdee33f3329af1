package models

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/replyflow/replyflow/pipeline"
)

// openAIModel serves any OpenAI-compatible chat completions endpoint:
// OpenAI, OpenRouter, Ollama, vLLM, llama.cpp's server (OPENAI_BASE_URL).
type openAIModel struct {
	name, model string
	maxTokens   int64
	client      openai.Client
}

func newOpenAI(name, model string, maxTokens int64, extra []option.RequestOption) *openAIModel {
	opts := append([]option.RequestOption{option.WithMaxRetries(0)}, extra...)
	return &openAIModel{name: name, model: model, maxTokens: maxTokens, client: openai.NewClient(opts...)}
}

func (m *openAIModel) Name() string { return m.name }

func (m *openAIModel) Complete(ctx context.Context, p Prompt) (string, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	if p.System != "" {
		msgs = append(msgs, openai.SystemMessage(p.System))
	}
	for _, msg := range p.Messages {
		if msg.Role == "assistant" {
			msgs = append(msgs, openai.AssistantMessage(msg.Text))
		} else {
			msgs = append(msgs, openai.UserMessage(msg.Text))
		}
	}
	params := openai.ChatCompletionNewParams{Model: m.model, Messages: msgs}
	if m.maxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(m.maxTokens)
	}
	resp, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			e := &Error{Type: Classify(apiErr.StatusCode, apiErr.Type+" "+apiErr.Code, apiErr.Message), Status: apiErr.StatusCode, Model: m.name, Err: fmt.Errorf("%s", apiErr.Message)}
			if apiErr.Response != nil {
				e.RetryAfter = retryAfter(apiErr.Response.Header.Get("retry-after-ms"), apiErr.Response.Header.Get("retry-after"))
			}
			return "", e
		}
		return "", transportError(m.name, err)
	}
	if len(resp.Choices) == 0 {
		return "", &Error{Type: pipeline.ErrFormat, Model: m.name, Err: errors.New("the response has no choices")}
	}
	choice := resp.Choices[0]
	if choice.FinishReason == "content_filter" {
		return "", &Error{Type: pipeline.ErrContentFilter, Model: m.name, Err: errors.New("the reply was withheld by the provider's content filter")}
	}
	text := strings.TrimSpace(choice.Message.Content)
	if text == "" && choice.Message.Refusal != "" {
		return "", &Error{Type: pipeline.ErrContentFilter, Model: m.name, Err: fmt.Errorf("the model refused: %s", choice.Message.Refusal)}
	}
	return text, nil
}
