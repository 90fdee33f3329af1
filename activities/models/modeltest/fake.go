// Package modeltest has fake model provider servers for tests: an
// OpenAI-compatible chat completions endpoint and the Anthropic Messages
// endpoint, on loopback, scriptable per request, spoken to by the real SDK
// clients.
package modeltest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Step scripts the answer to one request.
type Step struct {
	Status       int    // 0 means 200
	RetryAfter   string // Retry-After header, seconds
	ErrorType    string // the provider's error type (or OpenAI's code)
	Message      string // the error message
	Text         string // the reply on success; "" echoes the last user text
	FinishReason string // OpenAI finish_reason / Anthropic stop_reason
	Latency      time.Duration
	// Hold, when set, keeps the request unanswered until it is closed
	// (Latency counts from then): a test decides the moment a model
	// call in flight ends instead of guessing how long it needs.
	Hold <-chan struct{}
	// ToolCalls are returned instead of (or with) text.
	ToolCalls []ToolCall
	// InputTokens and OutputTokens are the usage reported (1 and 1 when
	// zero); Cost, when set, is added as OpenRouter does (usage.cost).
	InputTokens, OutputTokens int
	Cost                      *float64
	// Thinking is an Anthropic thinking block sent before the text.
	Thinking string
	// TokenDelay paces a reply: the pause before each of its word-sized
	// deltas when streamed, and their sum before the whole reply when
	// not, as a model that writes at a human-visible speed.
	TokenDelay time.Duration
	// BreakAfter, when positive, cuts a streamed reply's connection after
	// that many deltas: a provider that fails mid-answer.
	BreakAfter int
}

// ToolCall is a tool the scripted model asks to call.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON object
}

// Request is what the fake saw.
type Request struct {
	Model    string
	System   string
	Messages []string // "role: text"
	// ReasoningEffort is OpenAI's reasoning_effort; ThinkingBudget is
	// Anthropic's thinking.budget_tokens (0 when not enabled);
	// MaxTokens is max_tokens (Anthropic) or max_completion_tokens.
	ReasoningEffort string
	ThinkingBudget  int
	MaxTokens       int
	// Images are the image contents of the user messages, in order:
	// OpenAI's image_url (a data: URL) or Anthropic's image source as
	// "data:<media type>;base64,<data>".
	Images []string
	// Documents are the document contents of the user messages, in
	// order: OpenAI's file parts (file_data) and Anthropic's document
	// blocks with a base64 source.
	Documents []Document
	// CallIDs are the IDs of the assistant's tool calls sent back
	// (OpenAI's tool_calls, Anthropic's tool_use blocks), in order;
	// ResultIDs are those the tool results answer (OpenAI's tool
	// messages' tool_call_id, Anthropic's tool_result tool_use_id).
	CallIDs, ResultIDs []string
}

// Document is a document part the fake was sent, decoded.
type Document struct {
	// Name is OpenAI's filename or Anthropic's title.
	Name      string
	MediaType string
	Data      []byte
	// Part is how it came: "file" (OpenAI) or "document" (Anthropic).
	Part string
}

// Transcription is one audio file the fake's transcription endpoint
// (/v1/audio/transcriptions) was sent.
type Transcription struct {
	Model    string
	FileName string
	Audio    []byte
}

// Server is a fake provider.
type Server struct {
	*httptest.Server
	anthropic bool
	mu        sync.Mutex
	script    []Step
	requests  []Request
	// transcript answers every transcription (SetTranscript).
	transcript     string
	transcriptions []Transcription
	// holdTranscriptions keeps transcriptions unanswered until it is
	// closed (HoldTranscriptions).
	holdTranscriptions <-chan struct{}
	// speeches are what the speech endpoint was asked to speak;
	// speechFails answers them with an error while set.
	speeches    []Speech
	speechFails bool
}

// maxAudioBytes bounds an audio upload the fake reads.
const maxAudioBytes = 32 << 20

// SetTranscript sets the text the transcription endpoint answers.
func (s *Server) SetTranscript(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript = text
}

// HoldTranscriptions keeps each transcription unanswered until release
// is closed, or its client goes away, as Step.Hold does a model call: a
// test decides the moment a transcription in flight ends (a worker
// killed mid-transcription). Transcriptions lists a held one when it
// arrives; nil holds none.
func (s *Server) HoldTranscriptions(release <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdTranscriptions = release
}

// Transcriptions returns the audio files the fake was asked to
// transcribe so far, those held (HoldTranscriptions) included.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transcription(nil), s.transcriptions...)
}

func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(maxAudioBytes); err != nil {
		http.Error(w, `{"error":{"message":"bad multipart form"}}`, http.StatusBadRequest)
		return
	}
	f, h, err := r.FormFile("file")
	if err != nil {
		http.Error(w, `{"error":{"message":"no file"}}`, http.StatusBadRequest)
		return
	}
	audio, _ := io.ReadAll(io.LimitReader(f, maxAudioBytes))
	s.mu.Lock()
	s.transcriptions = append(s.transcriptions, Transcription{Model: r.FormValue("model"), FileName: h.Filename, Audio: audio})
	text, hold := s.transcript, s.holdTranscriptions
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": text})
}

// Speech is one text the fake's speech endpoint (/v1/audio/speech) was
// asked to speak.
type Speech struct {
	Model, Voice, Format, Input string
}

// SpeechAudio is the audio the fake's speech endpoint answers with: the
// start of an Ogg page and the text's length, not playable.
func SpeechAudio(input string) []byte {
	return []byte(fmt.Sprintf("OggS\x00fake-opus:%d", len(input)))
}

// FailSpeech makes the speech endpoint answer 500 (true) or speak again
// (false).
func (s *Server) FailSpeech(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.speechFails = fail
}

// Speeches returns what the fake was asked to speak so far.
func (s *Server) Speeches() []Speech {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Speech(nil), s.speeches...)
}

func (s *Server) speak(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string `json:"model"`
		Voice          string `json:"voice"`
		Input          string `json:"input"`
		ResponseFormat string `json:"response_format"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if req.Input == "" || len([]rune(req.Input)) > 4096 {
		http.Error(w, `{"error":{"message":"input must be 1 to 4096 characters"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	fails := s.speechFails
	if !fails {
		s.speeches = append(s.speeches, Speech{Model: req.Model, Voice: req.Voice, Format: req.ResponseFormat, Input: req.Input})
	}
	s.mu.Unlock()
	if fails {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"the fake's speech endpoint is failing (FailSpeech)","type":"server_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "audio/ogg")
	_, _ = w.Write(SpeechAudio(req.Input))
}

// NewOpenAI starts a fake OpenAI-compatible server; point the client's base
// URL at URL()+"/v1".
func NewOpenAI() *Server { return start(false) }

// NewAnthropic starts a fake Anthropic server; point the client's base URL
// at URL().
func NewAnthropic() *Server { return start(true) }

func start(anthropic bool) *Server {
	s := &Server{anthropic: anthropic}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Push scripts the next answers, in order; with none left, requests succeed.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, steps...)
}

// Requests returns what the server was asked so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

type wireRequest struct {
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Model           string          `json:"model"`
	System          json.RawMessage `json:"system"`
	Messages        []wireMessage   `json:"messages"`
	ReasoningEffort string          `json:"reasoning_effort"`
	Thinking        *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	wantPath := "/v1/chat/completions"
	if s.anthropic {
		wantPath = "/v1/messages"
	}
	if !s.anthropic && r.Method == http.MethodPost && r.URL.Path == "/v1/audio/transcriptions" {
		s.transcribe(w, r)
		return
	}
	if !s.anthropic && r.Method == http.MethodPost && r.URL.Path == "/v1/audio/speech" {
		s.speak(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != wantPath {
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	seen := Request{Model: req.Model, System: text(req.System), ReasoningEffort: req.ReasoningEffort, MaxTokens: max(req.MaxTokens, req.MaxCompletionTokens)}
	if req.Thinking != nil && req.Thinking.Type == "enabled" {
		seen.ThinkingBudget = req.Thinking.BudgetTokens
	}
	last := ""
	for _, m := range req.Messages {
		t := text(m.Content)
		if m.Role == "system" {
			seen.System = t
			continue
		}
		seen.Messages = append(seen.Messages, m.Role+": "+t)
		seen.Images = append(seen.Images, images(m.Content)...)
		seen.Documents = append(seen.Documents, documents(m.Content)...)
		calls, results := callIDs(m)
		seen.CallIDs = append(seen.CallIDs, calls...)
		seen.ResultIDs = append(seen.ResultIDs, results...)
		if m.Role == "user" && t != "" {
			last = t
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, seen)
	var step Step
	if len(s.script) > 0 {
		step, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()

	if step.Hold != nil {
		select {
		case <-step.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if step.Latency > 0 {
		select {
		case <-time.After(step.Latency):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if step.RetryAfter != "" {
		w.Header().Set("Retry-After", step.RetryAfter)
	}
	if step.Status >= 300 {
		w.WriteHeader(step.Status)
		_ = json.NewEncoder(w).Encode(s.errorBody(step))
		return
	}
	reply := step.Text
	if reply == "" && len(step.ToolCalls) == 0 {
		reply = "echo: " + last
	}
	if !req.Stream && step.TokenDelay > 0 {
		// The same model, asked without streaming, takes as long to
		// write its answer: it only says nothing until it is done.
		select {
		case <-time.After(time.Duration(len(strings.Fields(reply))) * step.TokenDelay):
		case <-r.Context().Done():
			return
		}
	}
	if req.Stream {
		s.stream(w, r.Context().Done(), req.Model, reply, step, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	_ = json.NewEncoder(w).Encode(s.successBody(req.Model, reply, step))
}

func (s *Server) errorBody(step Step) any {
	if s.anthropic {
		return map[string]any{"type": "error", "error": map[string]string{"type": step.ErrorType, "message": step.Message}}
	}
	return map[string]any{"error": map[string]any{"message": step.Message, "type": step.ErrorType, "code": step.ErrorType, "param": nil}}
}

func (s *Server) successBody(model, reply string, step Step) any {
	finish := step.FinishReason
	if s.anthropic {
		content := []map[string]any{}
		if step.Thinking != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": step.Thinking, "signature": "sig"})
		}
		if reply != "" {
			content = append(content, map[string]any{"type": "text", "text": reply})
		}
		for _, c := range step.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
		}
		if finish == "" {
			finish = "end_turn"
			if len(step.ToolCalls) > 0 {
				finish = "tool_use"
			}
		}
		return map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": finish, "usage": map[string]int{"input_tokens": or1(step.InputTokens), "output_tokens": or1(step.OutputTokens)}}
	}
	message := map[string]any{"role": "assistant", "content": reply}
	if len(step.ToolCalls) > 0 {
		var calls []map[string]any
		for _, c := range step.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Arguments}})
		}
		message["tool_calls"] = calls
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
		"choices": []map[string]any{{"index": 0, "message": message, "finish_reason": finish}},
		"usage":   s.openAIUsage(step)}
}

func (s *Server) openAIUsage(step Step) map[string]any {
	in, out := or1(step.InputTokens), or1(step.OutputTokens)
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if step.Cost != nil {
		usage["cost"] = *step.Cost
	}
	return usage
}

func or1(n int) int {
	if n == 0 {
		return 1
	}
	return n
}

// stream answers as Server-Sent Events, the reply split into word-sized
// deltas, in each provider's event format.
func (s *Server) stream(w http.ResponseWriter, done <-chan struct{}, model, reply string, step Step, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		body, _ := json.Marshal(data)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", body)
		if flusher != nil {
			flusher.Flush()
		}
	}
	pieces := strings.SplitAfter(reply, " ")
	if reply == "" {
		pieces = nil
	}
	// pace waits before delta i and says whether to go on: false once the
	// client left or the script breaks the stream here.
	pace := func(i int) bool {
		if step.BreakAfter > 0 && i >= step.BreakAfter {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return false
		}
		if step.TokenDelay > 0 {
			select {
			case <-time.After(step.TokenDelay):
			case <-done:
				return false
			}
		}
		return true
	}
	if s.anthropic {
		finish := step.FinishReason
		if finish == "" {
			finish = "end_turn"
		}
		send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "usage": map[string]int{"input_tokens": 1, "output_tokens": 0}}})
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}})
		for i, p := range pieces {
			if !pace(i) {
				return
			}
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": p}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		for i, c := range step.ToolCalls {
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i + 1, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i + 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": c.Arguments}})
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i + 1})
		}
		send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": finish}, "usage": map[string]int{"input_tokens": or1(step.InputTokens), "output_tokens": or1(step.OutputTokens)}})
		send("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, p := range pieces {
		if !pace(i) {
			return
		}
		send("", chunk(map[string]any{"content": p}, nil))
	}
	finish := step.FinishReason
	if len(step.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range step.ToolCalls {
			calls = append(calls, map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Arguments}})
		}
		send("", chunk(map[string]any{"tool_calls": calls}, nil))
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	send("", chunk(map[string]any{}, finish))
	if includeUsage {
		send("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": []any{}, "usage": s.openAIUsage(step)})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// text reads a content field that is either a string or a list of blocks.
func text(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return fmt.Sprintf("<%s>", raw)
	}
	parts := make([]string, len(blocks))
	for i, b := range blocks {
		parts[i] = b.Text
	}
	return strings.Join(parts, "")
}

// callIDs reads the tool call IDs of a message: those of the calls and
// those the results answer, in either provider's form.
func callIDs(m wireMessage) (calls, results []string) {
	for _, c := range m.ToolCalls {
		calls = append(calls, c.ID)
	}
	if m.Role == "tool" {
		results = append(results, m.ToolCallID)
	}
	var blocks []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		ToolUseID string `json:"tool_use_id"`
	}
	if json.Unmarshal(m.Content, &blocks) != nil {
		return calls, results
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_use":
			calls = append(calls, b.ID)
		case "tool_result":
			results = append(results, b.ToolUseID)
		}
	}
	return calls, results
}

// images reads the image blocks of a content list: OpenAI's image_url
// parts and Anthropic's base64 image blocks.
func images(raw json.RawMessage) []string {
	var blocks []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
		Source struct {
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		switch b.Type {
		case "image_url":
			out = append(out, b.ImageURL.URL)
		case "image":
			out = append(out, "data:"+b.Source.MediaType+";base64,"+b.Source.Data)
		}
	}
	return out
}

// documents reads the document blocks of a content list: OpenAI's file
// parts with file_data (a data: URL) and Anthropic's document blocks
// with a base64 source. A part that does not decode is recorded with no
// data, so a test sees it was malformed.
func documents(raw json.RawMessage) []Document {
	var blocks []struct {
		Type string `json:"type"`
		File struct {
			FileData string `json:"file_data"`
			Filename string `json:"filename"`
		} `json:"file"`
		Title  string `json:"title"`
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []Document
	for _, b := range blocks {
		switch b.Type {
		case "file":
			d := Document{Name: b.File.Filename, Part: "file"}
			if head, data, ok := strings.Cut(b.File.FileData, ";base64,"); ok && strings.HasPrefix(head, "data:") {
				d.MediaType = strings.TrimPrefix(head, "data:")
				d.Data, _ = base64.StdEncoding.DecodeString(data)
			}
			out = append(out, d)
		case "document":
			d := Document{Name: b.Title, MediaType: b.Source.MediaType, Part: "document"}
			if b.Source.Type == "base64" {
				d.Data, _ = base64.StdEncoding.DecodeString(b.Source.Data)
			}
			out = append(out, d)
		}
	}
	return out
}
