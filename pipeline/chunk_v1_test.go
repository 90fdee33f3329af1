package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The cases ChunkV1 was written against, unchanged.
func TestChunkV1(t *testing.T) {
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
			assert.Equal(t, c.want, ChunkV1(c.text, c.limit))
		})
	}
}

// chunkV1Fingerprint is the SHA-256 of ChunkV1's output over
// frozenChunkInputs, taken from the chunker as it was at a4023bd.
const chunkV1Fingerprint = "050987c222d950e425ade9d56b37c672c9e141027f0bde4256119d1c1e73e7bf"

// ChunkV1 must chunk exactly as it did when sessions started with it, or
// their replays fail: its output over thousands of Markdown-heavy inputs
// is pinned. A change here means ChunkV1 was changed: undo that change.
func TestChunkV1IsFrozen(t *testing.T) {
	assert.Equal(t, chunkV1Fingerprint, chunkFingerprint(ChunkV1), "ChunkV1's output changed; it must never change (running sessions replay with it)")
}

func chunkFingerprint(chunk func(string, int) []string) string {
	h := sha256.New()
	for _, in := range frozenChunkInputs() {
		h.Write([]byte(strconv.Itoa(in.limit)))
		for _, c := range chunk(in.text, in.limit) {
			h.Write([]byte(strconv.Itoa(len(c)) + ":" + c))
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

type chunkInput struct {
	text  string
	limit int
}

// frozenChunkInputs are 4000 pseudo-random replies made of Markdown's
// parts (fences of both kinds, indentation, parentheses, links, wide
// characters), from a fixed seed, with limits from 1 to 120.
func frozenChunkInputs() []chunkInput {
	parts := []string{"```", "~~~", "````", "```go", "~~~ py", "\n", "\n\n", " ", "  ", "    ", "\t",
		"word", "longerword", "(", ")", "[link](http://x.y/z)", "é", "😀", "`", "``", "a", "b c", "> q", "- item", "# h"}
	rng := rand.New(rand.NewSource(14))
	out := make([]chunkInput, 0, 4000)
	for i := 0; i < 4000; i++ {
		var b strings.Builder
		for n := rng.Intn(60); n > 0; n-- {
			b.WriteString(parts[rng.Intn(len(parts))])
		}
		out = append(out, chunkInput{b.String(), 1 + rng.Intn(120)})
	}
	return out
}
