package pipeline

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChunk(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"empty", "", 10, nil},
		{"blank", " \n\t ", 10, nil},
		{"fits", "hello world", 20, []string{"hello world"}},
		{"trimmed", "  hello  ", 20, []string{"hello"}},
		{"paragraph break wins", "aaaa\n\nbb cc dd", 12, []string{"aaaa", "bb cc dd"}},
		{"line break before space", "aaaa bb\ncc dd", 12, []string{"aaaa bb", "cc dd"}},
		{"space", "one two three four", 9, []string{"one two", "three", "four"}},
		{"hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"runes not bytes", "ééééé", 2, []string{"éé", "éé", "é"}},
		{"UTF-16 units: an emoji is two", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"a character wider than the limit still moves on", "😀😀", 1, []string{"😀", "😀"}},
		{"never inside parentheses", "see [x](http://a.b/c d) ok", 20, []string{"see", "[x](http://a.b/c d)", "ok"}},
		{"fence is closed and reopened", "intro\n```go\nline one\nline two\nline three\n```", 30,
			[]string{"intro\n```go\nline one\n```", "```go\nline two\nline three\n```"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Chunk(c.text, c.limit))
		})
	}
}

func TestChunkLongRunAtTheChannelLimit(t *testing.T) {
	chunks := Chunk(strings.Repeat("a", 5000), 4000)
	require.Len(t, chunks, 2)
	assert.Len(t, chunks[0], 4000)
	assert.Len(t, chunks[1], 1000)
	assert.Equal(t, 8000, ChunkLimitOf("webchat"))
	assert.Equal(t, 4096, ChunkLimitOf("telegram"))
	assert.Equal(t, 4000, ChunkLimitOf("unknown"))
}

func FuzzChunk(f *testing.F) {
	f.Add("hello world, this is a reply\n\nwith two paragraphs", 8)
	f.Add("ééé ü 😀😀😀 x", 2)
	f.Add(strings.Repeat("word ", 100), 17)
	f.Add("```python\nprint(1)\nprint(2)\n```\n(a b c) d", 20)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || limit > 5000 || !utf8.ValidString(text) {
			t.Skip()
		}
		pieces := chunkPieces(text, limit)
		var bodies strings.Builder
		for i, p := range pieces {
			chunk := p.reopen + p.body + p.close
			n := len(utf16.Encode([]rune(chunk)))
			if n > limit && utf8.RuneCountInString(chunk) > 1 || strings.TrimSpace(p.body) == "" && p.reopen == "" {
				t.Fatalf("chunk %d has %d UTF-16 units (limit %d) or no text: %q", i, n, limit, chunk)
			}
			if limit >= minFenceLimit && fencesBalanced(text) && !fencesBalanced(chunk) {
				t.Fatalf("chunk %d leaves a fence open: %q", i, chunk)
			}
			bodies.WriteString(p.body)
		}
		if got, want := stripSpace(bodies.String()), stripSpace(text); got != want {
			t.Fatalf("content changed:\n got %q\nwant %q", got, want)
		}
	})
}

func fencesBalanced(s string) bool {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if isFenceLine(line) {
			n++
		}
	}
	return n%2 == 0
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
