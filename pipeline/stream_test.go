package pipeline

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShowableHoldsBackWhatCouldStillBeSilent(t *testing.T) {
	for _, tc := range []struct {
		partial, want string
		ok            bool
	}{
		{"", "", false},
		{"NO_", "", false},
		{"no_rep", "", false},
		{"NO_REPLY", "", false},
		{"HEARTBEAT", "", false},
		{"HEARTBEAT_OK", "", false},
		{"NO_REPLYhello", "hello", true},
		{"Hello", "Hello", true},
		{"Hello the", "Hello the", true},
		{"Hello N", "Hello", true},
		{"Hello NO_REP", "Hello", true},
		{"Not now", "Not now", true},
		{"HEART of the matter", "HEART of the matter", true},
	} {
		got, ok := Showable(tc.partial)
		assert.Equal(t, tc.ok, ok, "%q", tc.partial)
		assert.Equal(t, tc.want, got, "%q", tc.partial)
	}
}

func TestPreviewTextFitsOneMessage(t *testing.T) {
	assert.Equal(t, "short", PreviewText("short", 10))
	long := strings.Repeat("é", 30)
	got := PreviewText(long, 10)
	assert.Equal(t, 10, utf8.RuneCountInString(got))
	assert.True(t, strings.HasSuffix(got, " …"))
	assert.Equal(t, long, PreviewText(long, 0))
}

func TestPreviewPacingWaitsThenThrottles(t *testing.T) {
	p := PreviewPacing{FirstAfter: time.Second, Every: time.Second}
	start := time.Unix(1000, 0)
	assert.False(t, p.Due(start.Add(500*time.Millisecond), start, time.Time{}), "an answer done within FirstAfter shows no preview")
	assert.True(t, p.Due(start.Add(time.Second), start, time.Time{}))
	last := start.Add(1200 * time.Millisecond)
	assert.False(t, p.Due(last.Add(999*time.Millisecond), start, last), "at most one edit a second")
	assert.True(t, p.Due(last.Add(time.Second), start, last))
}

func paragraph(n int, word string) string {
	return strings.TrimSpace(strings.Repeat(word+" ", n))
}

func TestBlockCoalescerCutsAfterParagraphsBetweenMinAndMax(t *testing.T) {
	c := BlockCoalescer{Min: 100, Max: 150}
	p1 := paragraph(12, "alpha") // 71 chars: too short alone
	p2 := paragraph(8, "beta")   // 39
	p3 := paragraph(10, "gamma")
	var blocks []Block
	text := p1 + "\n\n" + p2 + "\n\n" + p3 + "\n\n" + "tail"
	for _, r := range text {
		blocks = append(blocks, c.Push(string(r))...)
	}
	require.Len(t, blocks, 1)
	assert.Equal(t, p1+"\n\n"+p2, blocks[0].Text, "two paragraphs reach Min; a cut never splits one")
	assert.Equal(t, p3, text[blocks[0].End:blocks[0].End+len(p3)], "End is where the next block starts")
	assert.Equal(t, p3+"\n\ntail", strings.TrimSpace(c.Pending()))
	last, ok := c.Flush()
	require.True(t, ok)
	assert.Equal(t, Block{Text: p3 + "\n\ntail", End: len(text)}, last)
	_, ok = c.Flush()
	assert.False(t, ok, "nothing left")
}

func TestBlockCoalescerCutsALongParagraphAtAWordBeforeMax(t *testing.T) {
	c := BlockCoalescer{Min: 100, Max: 150}
	blocks := c.Push(paragraph(60, "word"))
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		n := utf8.RuneCountInString(b.Text)
		assert.LessOrEqual(t, n, 150)
		assert.GreaterOrEqual(t, n, 100)
		assert.False(t, strings.HasSuffix(b.Text, "wor"), "cut between words: %q", b.Text)
	}
}

func TestBlockCoalescerNeverCutsAFence(t *testing.T) {
	c := BlockCoalescer{Min: 50, Max: 80}
	code := "```go\n" + strings.Repeat("fmt.Println(\"x\")\n\n", 10) + "```\n"
	text := "Here is the code:\n\n" + code + "\nAnd that is all of it, for now at least.\n\n"
	var blocks []string
	for i := 0; i < len(text); i += 7 {
		for _, b := range c.Push(text[i:min(i+7, len(text))]) {
			blocks = append(blocks, b.Text)
		}
		if endsInsideFence(c.Pending()) {
			probe := BlockCoalescer{Min: c.Min, Max: c.Max, pending: c.pending}
			_, ok := probe.Flush()
			assert.False(t, ok, "an idle flush inside a fence sends nothing")
		}
	}
	if rest, ok := c.Flush(); ok {
		blocks = append(blocks, rest.Text)
	}
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		assert.Equal(t, 0, strings.Count(b, "```")%2, "every block closes the fences it opens: %q", b)
	}
	assert.Equal(t, strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(strings.Join(blocks, "\n\n")), " "), "nothing lost or repeated")
}

// A long line that starts like a fence is not cut where the first part
// would open one on its own: while it is written its info string may
// still leave it an opener, and a backtick in the info string makes it
// text only as a whole (the fuzz test found both).
func TestBlockCoalescerDoesNotCutALineThatStartsLikeAFence(t *testing.T) {
	for name, text := range map[string]string{
		"an opener being written":        "```" + strings.Repeat("0", 70) + "`",
		"text whose start is an opener":  "``` " + strings.Repeat("0", 20) + "`" + strings.Repeat("0", 50) + "\n",
		"a tilde opener with words":      "~~~ " + strings.Repeat("word ", 20),
		"backticks, info, then the text": "```go " + strings.Repeat("x", 30) + "` and more words after it to pass the maximum\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := BlockCoalescer{Min: 40, Max: 60}
			for _, r := range text {
				for _, b := range c.Push(string(r)) {
					assert.False(t, endsInsideFence(b.Text), "a block opens a fence it does not close: %q", b.Text)
				}
			}
		})
	}
}

func TestBlockCoalescerFlushesPartialTextOnIdle(t *testing.T) {
	c := BlockCoalescer{Min: 800, Max: 1200}
	assert.Empty(t, c.Push("A short first thought."))
	b, ok := c.Flush()
	require.True(t, ok)
	assert.Equal(t, "A short first thought.", b.Text)
	assert.Equal(t, "", c.Pending())
}

func TestParseStreamMode(t *testing.T) {
	for _, s := range []string{"off", "preview", "BLOCKS"} {
		_, err := ParseStreamMode(s)
		assert.NoError(t, err)
	}
	_, err := ParseStreamMode("live")
	assert.ErrorContains(t, err, "off, preview or blocks")
}

func TestAfterShownIsWhatFollowsTheBlocks(t *testing.T) {
	assert.Equal(t, "two", AfterShown("one\n\ntwo", "one\n\n"))
	assert.Equal(t, "", AfterShown("one", "one\n\n"))
	assert.Equal(t, "other", AfterShown("other", "one\n\n"), "an answer that did not continue is delivered whole")
}
