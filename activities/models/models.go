// Package models talks to model providers through their official SDKs
// (OpenAI-compatible chat completions, Anthropic Messages) and the offline
// demo model, and turns every provider failure into one error taxonomy
// (pipeline.Err*), decided from the HTTP status and the provider's error
// body. The SDKs' own retries are off: Temporal and the session workflow own
// retries and fallback.
//
// This package must not import Temporal or the workflow code; the
// activities turn its errors into ApplicationErrors.
package models

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/replyflow/replyflow/pipeline"
)

// Message is one turn of a prompt: a user or assistant message, an
// assistant's tool calls (Role "assistant" with ToolCalls), or a tool's
// result (Role "tool").
type Message struct {
	Role      string // "user", "assistant" or "tool"
	Text      string
	ToolCalls []pipeline.ToolCall
	// For Role "tool": the call answered and whether it failed.
	ToolCallID string
	IsError    bool
	// Images go with a "user" message, after its text: the model sees
	// them as image content.
	Images []Image
	// Documents go with a "user" message, after its images: the model
	// reads them as document content (PDFs).
	Documents []Document
}

// Image is a picture a user sent: its bytes, sniffed type and all.
type Image struct {
	MimeType string // image/jpeg, image/png, image/gif or image/webp
	Data     []byte
}

// DataURL is the image as a data: URL, how OpenAI's image parts take it.
func (i Image) DataURL() string {
	return "data:" + i.MimeType + ";base64," + base64.StdEncoding.EncodeToString(i.Data)
}

// Document is a PDF a user sent: its bytes and file name.
type Document struct {
	Name     string // the file's name as sent, "" when the platform gave none
	MimeType string // application/pdf
	Data     []byte
}

// DataURL is the document as a data: URL, how OpenAI's file parts take
// it (file_data).
func (d Document) DataURL() string {
	return "data:" + d.MimeType + ";base64," + base64.StdEncoding.EncodeToString(d.Data)
}

// FileName is the name the provider is given: the sent one, else one
// with the type's extension, as OpenAI needs a name with file_data.
func (d Document) FileName() string {
	if d.Name != "" {
		return d.Name
	}
	return "document.pdf"
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments (an object).
	Parameters map[string]any
}

// Prompt is what a model is asked.
type Prompt struct {
	System   string
	Messages []Message
	Tools    []Tool
	// Think is the reasoning effort asked for (/think); "" and off ask
	// for none.
	Think pipeline.ThinkLevel
}

// thinks is true when p asks for reasoning effort.
func (p Prompt) thinks() bool { return p.Think != "" && p.Think != pipeline.ThinkOff }

// Completion is a model's answer: text, tool calls, or both.
type Completion struct {
	Text      string
	ToolCalls []pipeline.ToolCall
	// Usage is what the provider reported the call cost.
	Usage pipeline.Usage
	// ThinkIgnored: the prompt asked for reasoning effort this model's
	// provider does not take.
	ThinkIgnored bool
}

// Model produces a completion of a prompt.
type Model interface {
	// Name is provider/model, as configured.
	Name() string
	Complete(ctx context.Context, p Prompt) (Completion, error)
}

// Streamer is a Model that can be read while it writes. onText gets the
// answer's text so far after each delta, on the caller's goroutine; the
// completion is the same Complete would give, and a failure mid-stream
// is classified as Complete's are (a broken connection is a Timeout).
type Streamer interface {
	Model
	Stream(ctx context.Context, p Prompt, onText func(textSoFar string)) (Completion, error)
}

// Error is a classified provider failure.
type Error struct {
	Type       string // one of pipeline.Err*
	Status     int
	RetryAfter time.Duration
	Model      string
	Err        error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Model, e.Type)
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Registry builds models by name ("openai/gpt-4o-mini",
// "anthropic/claude-sonnet-4-5", "demo/echo"), one client per provider.
type Registry struct {
	// MaxTokens bounds a reply, where the provider needs a bound.
	MaxTokens int64
	// DemoDelay is how long the demo model "thinks".
	DemoDelay time.Duration
	// Extra client options (tests point them at fake servers); the SDKs
	// read OPENAI_* and ANTHROPIC_* from the environment first.
	OpenAIOptions    []openaiopt.RequestOption
	AnthropicOptions []anthropicopt.RequestOption

	mu     sync.Mutex
	models map[string]Model
}

// Get returns the model of that name, building its client on first use.
func (r *Registry) Get(name string) (Model, error) {
	provider, model, err := pipeline.ParseModelName(name)
	if err != nil {
		return nil, &Error{Type: pipeline.ErrModelNotFound, Model: name, Err: err}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.models[name]; ok {
		return m, nil
	}
	var m Model
	switch provider {
	case "openai":
		m = newOpenAI(name, model, r.MaxTokens, r.OpenAIOptions)
	case "anthropic":
		m = newAnthropic(name, model, r.MaxTokens, r.AnthropicOptions)
	default:
		m = Demo{Delay: r.DemoDelay}
	}
	if r.models == nil {
		r.models = map[string]Model{}
	}
	r.models[name] = m
	return m, nil
}

// Classify decides the error type from what the provider said: its HTTP
// status, its error type or code, and its message.
func Classify(status int, kind, message string) string {
	text := strings.ToLower(kind + " " + message)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("insufficient_quota", "billing", "credit balance", "payment required", "quota exceeded"):
		return pipeline.ErrBilling
	case has("context_length_exceeded", "context length", "context window", "prompt is too long", "too many tokens", "maximum context"):
		return pipeline.ErrContextOverflow
	case has("content_filter", "content policy", "content_policy", "safety system", "flagged"):
		return pipeline.ErrContentFilter
	case status == 429 || has("rate_limit"):
		return pipeline.ErrRateLimited
	case status == 529 || status == 503 || has("overloaded"):
		return pipeline.ErrOverloaded
	case status == 401 || status == 403 || has("authentication_error", "permission_error", "invalid_api_key"):
		return pipeline.ErrAuth
	case status == 402:
		return pipeline.ErrBilling
	case status == 404 || has("model_not_found", "not_found_error", "does not exist"):
		return pipeline.ErrModelNotFound
	case status == 408 || status == 504 || has("timeout", "timed out"):
		return pipeline.ErrTimeout
	case status >= 500:
		return pipeline.ErrOverloaded
	}
	return pipeline.ErrFormat
}

// transportError classifies a failure with no HTTP answer: a timeout or an
// unreachable provider is worth trying elsewhere.
func transportError(name string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &Error{Type: pipeline.ErrTimeout, Model: name, Err: err}
}

// retryAfter reads a Retry-After header in seconds (or retry-after-ms).
func retryAfter(ms, seconds string) time.Duration {
	var n float64
	if _, err := fmt.Sscanf(ms, "%g", &n); err == nil && n > 0 {
		return time.Duration(n * float64(time.Millisecond))
	}
	if _, err := fmt.Sscanf(seconds, "%g", &n); err == nil && n > 0 {
		return time.Duration(n * float64(time.Second))
	}
	return 0
}
