package models

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/replyflow/replyflow/pipeline"
)

type anthropicModel struct {
	name, model string
	maxTokens   int64
	client      anthropic.Client
}

func newAnthropic(name, model string, maxTokens int64, extra []option.RequestOption) *anthropicModel {
	opts := append([]option.RequestOption{option.WithMaxRetries(0)}, extra...)
	if maxTokens <= 0 {
		maxTokens = 1024
	}
	return &anthropicModel{name: name, model: model, maxTokens: maxTokens, client: anthropic.NewClient(opts...)}
}

func (m *anthropicModel) Name() string { return m.name }

func (m *anthropicModel) Complete(ctx context.Context, p Prompt) (Completion, error) {
	resp, err := m.client.Messages.New(ctx, m.params(p))
	if err != nil {
		return Completion{}, m.failure(err)
	}
	return m.completion(resp)
}

// Stream asks for the same completion as Complete, read as it is
// written: onText gets the text so far after each delta.
func (m *anthropicModel) Stream(ctx context.Context, p Prompt, onText func(string)) (Completion, error) {
	stream := m.client.Messages.NewStreaming(ctx, m.params(p))
	defer stream.Close()
	var msg anthropic.Message
	var text strings.Builder
	for stream.Next() {
		event := stream.Current()
		if err := msg.Accumulate(event); err != nil {
			return Completion{}, &Error{Type: pipeline.ErrFormat, Model: m.name, Err: fmt.Errorf("read the stream: %w", err)}
		}
		if d, ok := event.AsAny().(anthropic.ContentBlockDeltaEvent); ok && d.Delta.Text != "" {
			text.WriteString(d.Delta.Text)
			onText(text.String())
		}
	}
	if err := stream.Err(); err != nil {
		return Completion{}, m.failure(err)
	}
	return m.completion(&msg)
}

func (m *anthropicModel) params(p Prompt) anthropic.MessageNewParams {
	params := anthropic.MessageNewParams{Model: anthropic.Model(m.model), MaxTokens: m.maxTokens}
	if budget := thinkingBudget[p.Think]; budget > 0 && !hasToolResults(p) {
		// The budget comes out of max_tokens, which must exceed it: the
		// answer keeps the room it had without thinking.
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(budget)
		params.MaxTokens = m.maxTokens + budget
	}
	if p.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: p.System}}
	}
	var results []anthropic.ContentBlockParamUnion
	flushResults := func() {
		if len(results) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
			results = nil
		}
	}
	for _, msg := range p.Messages {
		if msg.Role == "tool" {
			// Tool results go back together, in one user message.
			results = append(results, anthropic.NewToolResultBlock(msg.ToolCallID, msg.Text, msg.IsError))
			continue
		}
		flushResults()
		if msg.Role != "assistant" {
			blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(msg.Text)}
			for _, img := range msg.Images {
				blocks = append(blocks, anthropic.NewImageBlockBase64(img.MimeType, base64.StdEncoding.EncodeToString(img.Data)))
			}
			for _, doc := range msg.Documents {
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfDocument: &anthropic.DocumentBlockParam{
					Source: anthropic.DocumentBlockParamSourceUnion{OfBase64: &anthropic.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(doc.Data)}},
					Title:  anthropic.String(doc.FileName()),
				}})
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
			continue
		}
		var blocks []anthropic.ContentBlockParamUnion
		if msg.Text != "" {
			blocks = append(blocks, anthropic.NewTextBlock(msg.Text))
		}
		for _, c := range msg.ToolCalls {
			blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, json.RawMessage(c.Arguments), c.Name))
		}
		params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
	}
	flushResults()
	for _, t := range p.Tools {
		schema := anthropic.ToolInputSchemaParam{Properties: t.Parameters["properties"]}
		if req, ok := t.Parameters["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					schema.Required = append(schema.Required, s)
				}
			}
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: t.Name, Description: anthropic.String(t.Description), InputSchema: schema,
		}})
	}
	return params
}

// failure classifies a failed request.
func (m *anthropicModel) failure(err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		body := apiErr.RawJSON()
		e := &Error{Type: Classify(apiErr.StatusCode, string(apiErr.Type()), body), Status: apiErr.StatusCode, Model: m.name, Err: fmt.Errorf("%s", strings.TrimSpace(body))}
		if apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header.Get("retry-after-ms"), apiErr.Response.Header.Get("retry-after"))
		}
		return e
	}
	return transportError(m.name, err)
}

// completion reads the answer of a finished request.
func (m *anthropicModel) completion(resp *anthropic.Message) (Completion, error) {
	if resp.StopReason == "refusal" {
		return Completion{}, &Error{Type: pipeline.ErrContentFilter, Model: m.name, Err: errors.New("the model refused to answer")}
	}
	var b strings.Builder
	var out Completion
	for _, block := range resp.Content {
		switch block.Type {
		case "text":
			b.WriteString(block.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, pipeline.ToolCall{ID: block.ID, Name: block.Name, Arguments: string(block.Input)})
		}
	}
	out.Text = strings.TrimSpace(b.String())
	out.Usage = pipeline.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
	return out, nil
}

// hasToolResults: a step after tool calls. Anthropic wants the earlier
// step's thinking blocks back with its tool use when thinking is on, and
// the turn does not keep them; such a step runs without thinking.
func hasToolResults(p Prompt) bool {
	for _, m := range p.Messages {
		if m.Role == "tool" {
			return true
		}
	}
	return false
}

// thinkingBudget is the extended-thinking budget of each reasoning
// effort (Anthropic's minimum is 1024 tokens).
var thinkingBudget = map[pipeline.ThinkLevel]int64{
	pipeline.ThinkLow:    1024,
	pipeline.ThinkMedium: 4096,
	pipeline.ThinkHigh:   16384,
}
