package pipeline_test

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/pipeline"
)

// chunkWidths are the widths chunks are sent with: as written (web chat,
// and Telegram's plain-text fallback), and as Telegram counts the HTML a
// chunk renders to.
var chunkWidths = []width{
	{"as written", func(c string) int { return utf16Len(c) }},
	{"as Telegram HTML or plain text", func(c string) int {
		return max(telegram.VisibleLength(telegram.RenderHTML(c)), utf16Len(telegram.PlainText(c)))
	}},
}

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
		{"blank lines and trailing space dropped", "\n\n  hello  \n", 20, []string{"  hello"}},
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
		{"next chunk keeps its indentation", "para one\n\n  - nested item", 16, []string{"para one", "  - nested item"}},
		{"no chunk starts with a fence its line does not have", "Use ~~~ or ``` to start one, and the same to end it. Then ~~~~ longer ones work too.", 20,
			[]string{"Use ~~~ or ``` to", "start one, and the", "same to end it.", "Then ~~~~ longer", "ones work too."}},
		{"a run of backticks wider than half the limit is cut like text", "x" + strings.Repeat("`", 40), 16,
			[]string{"x" + strings.Repeat("`", 15), strings.Repeat("`", 16), strings.Repeat("`", 9)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chunks := pipeline.Chunk(c.text, c.limit)
			assert.Equal(t, c.want, chunks)
			assert.NoError(t, checkChunks(c.text, c.limit, chunks, chunkWidths...))
		})
	}
}

// Inputs whose fences a plain cut at the limit breaks: Chunk keeps them,
// and the checker sees the plain cut break each (but the last).
var fenceBreakers = []struct {
	name  string
	text  string
	limit int
	want  []string
}{
	{"a ~~~ fence", "intro\n~~~python\nline one\nline two\nline three\n~~~\nafter", 30,
		[]string{"intro\n~~~python\nline one\n~~~", "~~~python\nline two\n~~~", "~~~python\nline three\n~~~\nafter"}},
	{"a fence of four backticks holding a ``` line", "````md\n```go\nx := 1\n```\ntext after\n````\nend", 30,
		[]string{"````md\n```go\nx := 1\n```\n````", "````md\ntext after\n````\nend"}},
	{"a reopened fence keeps its first line's indentation", "```py\ndef f():\n    return 1\n\n    return 2\n```", 24,
		[]string{"```py\ndef f():\n```", "```py\n    return 1\n\n```", "```py\n    return 2\n```"}},
	{"a reopened fence keeps its info string", "```javascript\nlet a = 1;\nlet b = 2;\nlet c = 3;\n```", 30,
		[]string{"```javascript\nlet a = 1;\n```", "```javascript\nlet b = 2;\n```", "```javascript\nlet c = 3;\n```"}},
	{"a hard cut never lands in a closing fence", "```sh x (y\nls\n```\n\nafter it", 20,
		[]string{"```sh x (y\nls\n```", "after it"}},
}

func TestChunkKeepsFences(t *testing.T) {
	for _, c := range fenceBreakers {
		t.Run(c.name, func(t *testing.T) {
			chunks := pipeline.Chunk(c.text, c.limit)
			assert.Equal(t, c.want, chunks)
			assert.NoError(t, checkChunks(c.text, c.limit, chunks, chunkWidths...))
		})
	}
}

// The checker can fail: it catches each fence break of a plain cut.
// (Where a hard cut lands is Chunk's own rule: a plain cut at that
// case's limit lands past the closing fence, breaking a word only.)
func TestCheckChunksCatchesAPlainCut(t *testing.T) {
	for _, c := range fenceBreakers {
		if c.name == "a hard cut never lands in a closing fence" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			err := checkChunks(c.text, c.limit, plainCut(c.text, c.limit), chunkWidths...)
			require.Error(t, err)
			t.Log(err)
		})
	}
}

// plainCut cuts text every limit characters, blind to Markdown.
func plainCut(text string, limit int) []string {
	var chunks []string
	for runes := []rune(text); len(runes) > 0; {
		n := min(limit, len(runes))
		chunks = append(chunks, string(runes[:n]))
		runes = runes[n:]
	}
	return chunks
}

func TestChunkLongRunAtTheChannelLimit(t *testing.T) {
	chunks := pipeline.Chunk(strings.Repeat("a", 5000), 4000)
	require.Len(t, chunks, 2)
	assert.Len(t, chunks[0], 4000)
	assert.Len(t, chunks[1], 1000)
}

// Replies made of Markdown's awkward parts reach corners that byte
// mutation takes long to find: longer runs of this generator found the
// failures kept in testdata/fuzz/FuzzChunk.
func TestChunkRulesOnGeneratedReplies(t *testing.T) {
	parts := []string{"```", "~~~", "````", "```go", "~~~ py", "\n", "\n", "\n\n", " ", "  ", "    ", "\t",
		"word", "longerword", "(", ")", "[link](http://x.y/z)", "é", "😀", "`", "``", "a", "b c", "> q", "- item",
		"# h", "```a`", "\r", "\u00a0", "&", "<b>", "\n   ```", "\n  ~~~~", "\n```\n", "\n~~~\n", "\n    code",
		"\n````\n", "abcdefghijklmnopqrstuvwxyz"}
	rng := rand.New(rand.NewSource(14))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := rng.Intn(50); n > 0; n-- {
			b.WriteString(parts[rng.Intn(len(parts))])
		}
		text, limit := b.String(), 16+rng.Intn(48)
		if err := checkChunks(text, limit, pipeline.Chunk(text, limit), chunkWidths...); err != nil {
			t.Fatalf("Chunk(%q, %d): %v", text, limit, err)
		}
	}
}

// FuzzChunk checks every rule of checkChunks for any reply and limit;
// limits wrap into 1..8192.
func FuzzChunk(f *testing.F) {
	f.Add("hello world, this is a reply\n\nwith two paragraphs", 8)
	f.Add("ééé ü 😀😀😀 x", 2)
	f.Add(strings.Repeat("word ", 100), 17)
	f.Add("```python\nprint(1)\nprint(2)\n```\n(a b c) d", 20)
	for _, c := range fenceBreakers {
		f.Add(c.text, c.limit)
	}
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || len(text) > 1<<14 {
			t.Skip()
		}
		limit = (limit-1)%8192 + 1
		chunks := pipeline.Chunk(text, limit)
		if err := checkChunks(text, limit, chunks, chunkWidths...); err != nil {
			t.Fatalf("Chunk(%q, %d): %v", text, limit, err)
		}
	})
}
