package models

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// Speaker speaks a reply: it returns the audio of text, in Ogg/Opus (what
// a voice note is on the platforms that have them).
type Speaker interface {
	Speak(ctx context.Context, text string) ([]byte, error)
}

// MaxSpeechChars is the speech API's bound on the text it speaks.
const MaxSpeechChars = 4096

// maxSpeechBytes bounds the audio read back from the speech API: 4096
// characters are a few minutes of speech, far less than this in Opus.
const maxSpeechBytes = 16 << 20

// OpenAISpeaker speaks with OpenAI's speech API (gpt-4o-mini-tts,
// tts-1...), in one of its voices, through the client options the chat
// models use (OPENAI_API_KEY, OPENAI_BASE_URL, or a test's fake).
type OpenAISpeaker struct {
	Model, Voice string
	client       openai.Client
}

// NewOpenAISpeaker builds a speaker for model and voice; it makes no
// call.
func NewOpenAISpeaker(model, voice string, extra ...option.RequestOption) *OpenAISpeaker {
	opts := append([]option.RequestOption{option.WithMaxRetries(0)}, extra...)
	return &OpenAISpeaker{Model: model, Voice: voice, client: openai.NewClient(opts...)}
}

// Speak asks for text as Ogg/Opus audio; text longer than MaxSpeechChars
// is the caller's to cut (SpeechText).
func (s *OpenAISpeaker) Speak(ctx context.Context, text string) ([]byte, error) {
	resp, err := s.client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
		Input:          text,
		Model:          openai.SpeechModel(s.Model),
		Voice:          openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String(s.Voice)},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatOpus,
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	audio, err := io.ReadAll(io.LimitReader(resp.Body, maxSpeechBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the speech audio: %w", err)
	}
	if len(audio) == 0 || len(audio) > maxSpeechBytes {
		return nil, fmt.Errorf("the speech API answered %d bytes of audio (expected 1 byte to %d MiB)", len(audio), maxSpeechBytes>>20)
	}
	return audio, nil
}

// SpeechText is text cut to at most max characters (runes) at the end of
// a sentence (or, with none, of a line or a word), for the speech API.
func SpeechText(text string, max int) string {
	text = strings.TrimSpace(text)
	runes := []rune(text)
	if len(runes) <= max {
		return text
	}
	head := string(runes[:max])
	for _, cut := range []func(string) int{lastSentenceEnd, func(s string) int { return strings.LastIndex(s, "\n") }, func(s string) int { return strings.LastIndexAny(s, " \t") }} {
		if i := cut(head); i > len(head)/2 {
			return strings.TrimSpace(head[:i])
		}
	}
	return strings.TrimSpace(head)
}

// lastSentenceEnd is the byte offset just after the last sentence end
// (., ! or ? followed by a space or a line break) in s, or -1.
func lastSentenceEnd(s string) int {
	for i := len(s) - 2; i >= 0; i-- {
		switch s[i] {
		case '.', '!', '?':
			if s[i+1] == ' ' || s[i+1] == '\n' {
				return i + 1
			}
		}
	}
	return -1
}
