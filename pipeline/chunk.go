package pipeline

import (
	"strings"
	"unicode/utf8"
)

// Chunk splits a reply into pieces of at most limit runes each, in order,
// preferring to break after a blank line, then a line end, then a space, and
// splitting inside a word only when a word is longer than limit. Whitespace
// at the edges of every chunk is trimmed and blank chunks are dropped; no
// other character is lost or reordered.
func Chunk(text string, limit int) []string {
	if limit < 1 {
		limit = 1
	}
	var chunks []string
	rest := strings.TrimSpace(text)
	for rest != "" {
		if utf8.RuneCountInString(rest) <= limit {
			chunks = append(chunks, rest)
			break
		}
		cut := byteOffsetOfRune(rest, limit)
		if at := breakPoint(rest[:cut]); at > 0 {
			cut = at
		}
		if piece := strings.TrimSpace(rest[:cut]); piece != "" {
			chunks = append(chunks, piece)
		}
		rest = strings.TrimSpace(rest[cut:])
	}
	return chunks
}

// breakPoint finds the best place to end a chunk within window: just after
// the last paragraph break, line break or space in its second half, so that
// chunks do not come out tiny. Zero means none was found.
func breakPoint(window string) int {
	half := len(window) / 2
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i >= half && i > 0 {
			return i + len(sep)
		}
	}
	return 0
}

func byteOffsetOfRune(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
