package pipeline

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzBlockCoalescer feeds a model's text in deltas of every size: no
// character is lost or repeated, and no block ends inside a code fence.
func FuzzBlockCoalescer(f *testing.F) {
	f.Add("Para one.\n\nPara two, longer.\n\n```go\nx := 1\n\ny := 2\n```\nAfter.", uint8(3))
	f.Add(strings.Repeat("word ", 400), uint8(17))
	f.Add("~~~\n"+strings.Repeat("code line\n", 200)+"~~~\n\ntail", uint8(1))
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		if len(text) > 4<<10 || !utf8.ValidString(text) {
			// Seventy times Max is structure enough (a longer open fence
			// costs its square: Push scans what is held, which its caller
			// bounds to a message). A model's text arrives decoded from
			// JSON, valid UTF-8, in deltas of whole characters.
			return
		}
		c := BlockCoalescer{Min: 40, Max: 60}
		n := int(step)%23 + 1
		var blocks []string
		for i := 0; i < len(text); {
			end := i
			for k := 0; k < n && end < len(text); k++ {
				_, size := utf8.DecodeRuneInString(text[end:])
				end += size
			}
			delta := text[i:end]
			i = end
			for _, b := range c.Push(delta) {
				if endsInsideFence(b.Text) {
					t.Fatalf("block ends inside a fence: %q", b.Text)
				}
				blocks = append(blocks, b.Text)
			}
		}
		if b, ok := c.Flush(); ok {
			blocks = append(blocks, b.Text)
		}
		got := noSpace(strings.Join(blocks, "") + c.Pending())
		if want := noSpace(text); got != want {
			t.Fatalf("text changed:\n got %q\nwant %q", got, want)
		}
	})
}

func noSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
