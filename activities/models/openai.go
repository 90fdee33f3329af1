package models

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

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

func (m *openAIModel) Complete(ctx context.Context, p Prompt) (Completion, error) {
	resp, err := m.client.Chat.Completions.New(ctx, m.params(p))
	if err != nil {
		return Completion{}, m.failure(err)
	}
	return m.completion(resp)
}

// Stream asks for the same completion as Complete, read as it is
// written: onText gets the text so far after each delta.
func (m *openAIModel) Stream(ctx context.Context, p Prompt, onText func(string)) (Completion, error) {
	params := m.params(p)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := m.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var text strings.Builder
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			text.WriteString(chunk.Choices[0].Delta.Content)
			onText(text.String())
		}
	}
	if err := stream.Err(); err != nil {
		return Completion{}, m.failure(err)
	}
	return m.completion(&acc.ChatCompletion)
}

func (m *openAIModel) params(p Prompt) openai.ChatCompletionNewParams {
	var msgs []openai.ChatCompletionMessageParamUnion
	if p.System != "" {
		msgs = append(msgs, openai.SystemMessage(p.System))
	}
	for _, msg := range p.Messages {
		switch {
		case msg.Role == "tool":
			msgs = append(msgs, openai.ToolMessage(msg.Text, msg.ToolCallID))
		case msg.Role == "assistant" && len(msg.ToolCalls) > 0:
			a := openai.ChatCompletionAssistantMessageParam{}
			if msg.Text != "" {
				a.Content.OfString = openai.String(msg.Text)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
					},
				})
			}
			msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case msg.Role == "assistant":
			msgs = append(msgs, openai.AssistantMessage(msg.Text))
		case len(msg.Images) > 0 || len(msg.Documents) > 0:
			parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(msg.Text)}
			for _, img := range msg.Images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: img.DataURL()}))
			}
			for _, doc := range msg.Documents {
				parts = append(parts, openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
					FileData: openai.String(doc.DataURL()), Filename: openai.String(doc.FileName()),
				}))
			}
			msgs = append(msgs, openai.UserMessage(parts))
		default:
			msgs = append(msgs, openai.UserMessage(msg.Text))
		}
	}
	params := openai.ChatCompletionNewParams{Model: m.model, Messages: msgs}
	for _, t := range p.Tools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: shared.FunctionParameters(t.Parameters),
		}))
	}
	if m.maxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(m.maxTokens)
	}
	if p.thinks() {
		params.ReasoningEffort = shared.ReasoningEffort(p.Think)
	}
	return params
}

// failure classifies a failed request.
func (m *openAIModel) failure(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		e := &Error{Type: Classify(apiErr.StatusCode, apiErr.Type+" "+apiErr.Code, apiErr.Message), Status: apiErr.StatusCode, Model: m.name, Err: fmt.Errorf("%s", apiErr.Message)}
		if apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header.Get("retry-after-ms"), apiErr.Response.Header.Get("retry-after"))
		}
		return e
	}
	return transportError(m.name, err)
}

// completion reads the answer of a finished request.
func (m *openAIModel) completion(resp *openai.ChatCompletion) (Completion, error) {
	if len(resp.Choices) == 0 {
		return Completion{}, &Error{Type: pipeline.ErrFormat, Model: m.name, Err: errors.New("the response has no choices")}
	}
	choice := resp.Choices[0]
	if choice.FinishReason == "content_filter" {
		return Completion{}, &Error{Type: pipeline.ErrContentFilter, Model: m.name, Err: errors.New("the reply was withheld by the provider's content filter")}
	}
	out := Completion{Text: strings.TrimSpace(choice.Message.Content), Usage: openAIUsage(resp.Usage)}
	for _, c := range choice.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, pipeline.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if out.Text == "" && len(out.ToolCalls) == 0 && choice.Message.Refusal != "" {
		return Completion{}, &Error{Type: pipeline.ErrContentFilter, Model: m.name, Err: fmt.Errorf("the model refused: %s", choice.Message.Refusal)}
	}
	return out, nil
}

// openAIUsage reads the tokens, and the cost where an OpenAI-compatible
// provider adds one (OpenRouter's usage.cost, in USD).
func openAIUsage(u openai.CompletionUsage) pipeline.Usage {
	out := pipeline.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	// An unknown field is kept raw; the SDK marks it not Valid, as it
	// has no type to decode it into.
	if f, ok := u.JSON.ExtraFields["cost"]; ok {
		if cost, err := strconv.ParseFloat(f.Raw(), 64); err == nil && cost >= 0 {
			out.CostUSD, out.HasCost = cost, true
		}
	}
	return out
}
