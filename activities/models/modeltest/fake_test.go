package modeltest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fakes are checked against the real SDK clients, so tests that use
// them exercise the providers' real wire formats.

func openaiClient(s *Server) openai.Client {
	return openai.NewClient(openaiopt.WithBaseURL(s.URL+"/v1"), openaiopt.WithAPIKey("k"), openaiopt.WithMaxRetries(0))
}

func anthropicClient(s *Server) anthropic.Client {
	return anthropic.NewClient(anthropicopt.WithBaseURL(s.URL), anthropicopt.WithAPIKey("k"), anthropicopt.WithMaxRetries(0))
}

func TestFakeOpenAIToolCallsAndStreaming(t *testing.T) {
	s := NewOpenAI()
	defer s.Close()
	c := openaiClient(s)
	params := openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")}}

	s.Push(Step{ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}})
	resp, err := c.Chat.Completions.New(context.Background(), params)
	require.NoError(t, err)
	require.Len(t, resp.Choices[0].Message.ToolCalls, 1)
	call := resp.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "get_weather", call.Function.Name)
	assert.JSONEq(t, `{"city":"Oslo"}`, call.Function.Arguments)
	assert.Equal(t, "tool_calls", resp.Choices[0].FinishReason)

	s.Push(Step{Text: "sunny and cold"})
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, "sunny and cold", acc.Choices[0].Message.Content)
}

func TestFakeAnthropicToolUseAndStreaming(t *testing.T) {
	s := NewAnthropic()
	defer s.Close()
	c := anthropicClient(s)
	params := anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))}}

	s.Push(Step{ToolCalls: []ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}})
	msg, err := c.Messages.New(context.Background(), params)
	require.NoError(t, err)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "tool_use", msg.Content[0].Type)
	assert.Equal(t, "get_weather", msg.Content[0].Name)
	assert.JSONEq(t, `{"city":"Oslo"}`, string(msg.Content[0].Input))
	assert.Equal(t, anthropic.StopReason("tool_use"), msg.StopReason)

	s.Push(Step{Text: "sunny and cold"})
	stream := c.Messages.NewStreaming(context.Background(), params)
	var got anthropic.Message
	for stream.Next() {
		require.NoError(t, got.Accumulate(stream.Current()))
	}
	require.NoError(t, stream.Err())
	require.Len(t, got.Content, 1)
	assert.Equal(t, "sunny and cold", got.Content[0].Text)
	assert.Equal(t, anthropic.StopReason("end_turn"), got.StopReason)
}

func TestFakeHoldsAnAnswerUntilReleased(t *testing.T) {
	s := NewOpenAI()
	defer s.Close()
	c := openaiClient(s)
	params := openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	release := make(chan struct{})
	s.Push(Step{Hold: release, Text: "released"})
	answered := make(chan string, 1)
	go func() {
		resp, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		answered <- resp.Choices[0].Message.Content
	}()
	require.Eventually(t, func() bool { return len(s.Requests()) == 1 }, 5*time.Second, 10*time.Millisecond, "the request arrived")
	select {
	case got := <-answered:
		t.Fatalf("answered before the release: %q", got)
	default:
	}
	close(release)
	select {
	case got := <-answered:
		assert.Equal(t, "released", got)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer after the release")
	}
}

// A held transcription is listed when it arrives and answered once its
// release is closed; one whose client goes away ends with it.
func TestFakeOpenAIHoldsTranscriptions(t *testing.T) {
	s := NewOpenAI()
	defer s.Close()
	s.SetTranscript("hello there")
	release := make(chan struct{})
	s.HoldTranscriptions(release)
	c := openaiClient(s)
	params := openai.AudioTranscriptionNewParams{File: openai.File(strings.NewReader("OggS"), "voice.ogg", "audio/ogg"), Model: openai.AudioModelWhisper1}

	// The client goes away while held.
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { _, err := c.Audio.Transcriptions.New(ctx, params); gone <- err }()
	require.Eventually(t, func() bool { return len(s.Transcriptions()) == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.Error(t, <-gone)

	answered := make(chan string, 1)
	go func() {
		resp, err := c.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
			File: openai.File(strings.NewReader("OggS"), "voice.ogg", "audio/ogg"), Model: openai.AudioModelWhisper1})
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		answered <- resp.Text
	}()
	require.Eventually(t, func() bool { return len(s.Transcriptions()) == 2 }, 10*time.Second, 5*time.Millisecond)
	select {
	case got := <-answered:
		t.Fatalf("answered while held: %q", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	assert.Equal(t, "hello there", <-answered)
}
