package pipeline

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
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
		{"paragraph break wins", "aaaa bbbb\n\ncccc dddd", 15, []string{"aaaa bbbb", "cccc dddd"}},
		{"line break before space", "aaaa bb\ncc dd", 12, []string{"aaaa bb", "cc dd"}},
		{"space", "one two three four", 9, []string{"one two", "three", "four"}},
		{"long word is split", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"runes not bytes", "ééééé", 2, []string{"éé", "éé", "é"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Chunk(c.text, c.limit))
		})
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("hello world, this is a reply\n\nwith two paragraphs", 8)
	f.Add("ééé ü 😀😀😀 x", 2)
	f.Add(strings.Repeat("word ", 100), 17)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || limit > 5000 || !utf8.ValidString(text) {
			t.Skip()
		}
		chunks := Chunk(text, limit)
		for i, c := range chunks {
			if n := utf8.RuneCountInString(c); n > limit || n == 0 {
				t.Fatalf("chunk %d has %d runes, limit %d", i, n, limit)
			}
			if strings.TrimSpace(c) != c {
				t.Fatalf("chunk %d is not trimmed: %q", i, c)
			}
		}
		if got, want := stripSpace(strings.Join(chunks, "")), stripSpace(text); got != want {
			t.Fatalf("content changed:\n got %q\nwant %q", got, want)
		}
	})
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
