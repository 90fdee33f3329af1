package models

import (
	"bytes"
	"context"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/replyflow/replyflow/pipeline"
)

// SeesImages is whether a model takes image content, by its family:
// OpenAI's GPT-4o, GPT-4.1, GPT-5 and o-series models and every Claude
// model from Claude 3 on do; other models (OpenAI-compatible servers
// with any model behind them) are taken as text-only, and an operator
// names the ones that see (REPLYFLOW_IMAGE_MODELS).
func SeesImages(name string) bool {
	provider, model, err := pipeline.ParseModelName(name)
	if err != nil {
		return false
	}
	model = strings.ToLower(model)
	switch provider {
	case "anthropic":
		return strings.HasPrefix(model, "claude-") && !strings.HasPrefix(model, "claude-2") && !strings.HasPrefix(model, "claude-instant")
	case "openai":
		for _, family := range []string{"gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"} {
			if strings.HasPrefix(model, family) {
				return true
			}
		}
	}
	return false
}

// ReadsPDFs is whether a model takes PDF documents, by its family:
// OpenAI's GPT-4o, GPT-4.1, GPT-5 and o-series models (file parts) and
// the Claude models from Claude 3.5 Sonnet's October 2024 release on
// (document blocks) do; the first Claude 3 models, Claude 2 and any
// other model are taken as not reading them, and an operator names the
// ones that do (REPLYFLOW_PDF_MODELS).
func ReadsPDFs(name string) bool {
	provider, model, err := pipeline.ParseModelName(name)
	if err != nil {
		return false
	}
	model = strings.ToLower(model)
	switch provider {
	case "anthropic":
		for _, old := range []string{"claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5-sonnet-20240620"} {
			if strings.HasPrefix(model, old) {
				return false
			}
		}
		return SeesImages(name)
	case "openai":
		return SeesImages(name)
	}
	return false
}

// Transcriber turns a voice note or an audio file into text.
type Transcriber interface {
	Transcribe(ctx context.Context, name, mimeType string, audio []byte) (string, error)
}

// OpenAITranscriber transcribes with OpenAI's transcription API
// (whisper-1, gpt-4o-mini-transcribe...), through the client options the
// chat models use (OPENAI_API_KEY, OPENAI_BASE_URL, or a test's fake).
type OpenAITranscriber struct {
	Model  string
	client openai.Client
}

// NewOpenAITranscriber builds a transcriber for model; it makes no call.
func NewOpenAITranscriber(model string, extra ...option.RequestOption) *OpenAITranscriber {
	opts := append([]option.RequestOption{option.WithMaxRetries(0)}, extra...)
	return &OpenAITranscriber{Model: model, client: openai.NewClient(opts...)}
}

// Transcribe sends the audio and returns its text.
func (t *OpenAITranscriber) Transcribe(ctx context.Context, name, mimeType string, audio []byte) (string, error) {
	resp, err := t.client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File:  openai.File(bytes.NewReader(audio), name, mimeType),
		Model: openai.AudioModel(t.Model),
	})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}
