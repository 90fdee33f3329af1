package models

import (
	"context"
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

func (m *anthropicModel) Complete(ctx context.Context, p Prompt) (string, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(m.model), MaxTokens: m.maxTokens}
	if p.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: p.System}}
	}
	for _, msg := range p.Messages {
		block := anthropic.NewTextBlock(msg.Text)
		if msg.Role == "assistant" {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(block))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(block))
		}
	}
	resp, err := m.client.Messages.New(ctx, params)
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			body := apiErr.RawJSON()
			e := &Error{Type: Classify(apiErr.StatusCode, string(apiErr.Type()), body), Status: apiErr.StatusCode, Model: m.name, Err: fmt.Errorf("%s", strings.TrimSpace(body))}
			if apiErr.Response != nil {
				e.RetryAfter = retryAfter(apiErr.Response.Header.Get("retry-after-ms"), apiErr.Response.Header.Get("retry-after"))
			}
			return "", e
		}
		return "", transportError(m.name, err)
	}
	if resp.StopReason == "refusal" {
		return "", &Error{Type: pipeline.ErrContentFilter, Model: m.name, Err: errors.New("the model refused to answer")}
	}
	var b strings.Builder
	for _, block := range resp.Content {
		if block.Type == "text" {
			b.WriteString(block.Text)
		}
	}
	return strings.TrimSpace(b.String()), nil
}
