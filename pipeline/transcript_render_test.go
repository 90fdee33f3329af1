package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTranscriptMarkdownQuotesEveryBody(t *testing.T) {
	at := time.Date(2026, 11, 24, 9, 5, 0, 0, time.UTC)
	doc := RenderTranscriptMarkdown("session:webchat:demo", []TranscriptLine{
		{Who: "alice", At: at, Body: "# not a heading\n```go\nfmt.Println()\n"},
		{Who: "assistant\n### forged", At: at, Body: "ok  "},
	}, 2, at)
	assert.Equal(t, "# Conversation session:webchat:demo\n\nExported 2026-11-24 09:05 UTC · 2 message(s) (the 2 older one(s) are left out; `replyflow export` prints more)\n"+
		"\n### alice · 2026-11-24 09:05 UTC\n\n> # not a heading\n> ```go\n> fmt.Println()\n>\n"+
		"\n### assistant ### forged · 2026-11-24 09:05 UTC\n\n> ok\n", doc)
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			assert.NotContains(t, line, "not a heading", "a body never makes a heading")
		}
	}
}

func TestRenderContextShowsNumbersOnly(t *testing.T) {
	text := RenderContext(ContextReport{PersonaTokens: 20, SystemTokens: 60, TranscriptStored: 9, TranscriptMessages: 7, TranscriptTokens: 300, Budget: 8000, Compacted: true, Tools: []string{"skip_response", "lookup"}},
		ContextRequest{Observed: 2, ObservedTokens: 15}, "openai/gpt-4o")
	assert.Equal(t, "Next prompt (openai/gpt-4o), budget 8000 tokens:\n- persona: 20 tokens; with where and when: 60 tokens\n"+
		"- transcript: 7 of 9 stored message(s) fit, 300 tokens (starts from a /compact summary)\n- observed group messages: 2 (15 tokens)\n- tools (2): skip_response, lookup", text)
}
