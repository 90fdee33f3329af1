package pipeline

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is frozen. ChunkV1 is the chunker of the session runs that
// started before the fence-safe Chunk: their recorded histories hold the
// chunks it made, so replaying them must make the same chunks again. Never
// change it or the helpers below (each is its own copy, suffixed V1, so
// that work on Chunk cannot reach it); TestChunkV1IsFrozen guards it.

const fenceCloseV1 = "\n```"

// ChunkV1 splits a reply into messages of at most limit characters, in
// order, counted in UTF-16 code units as the chat platforms count them
// (an emoji outside the BMP is two), so a chunk within the limit here is
// within it there; only a single character wider than the limit can
// exceed it. It
// breaks at the last paragraph break that fits, else the last line break,
// else the last white space, else it cuts hard, and never breaks inside
// parentheses (a Markdown link's URL) when another break exists. A chunk
// that would end inside a code fence closes the fence, and the next chunk
// reopens it with the original opening line. No character is lost except
// the white space at a break.
func ChunkV1(text string, limit int) []string {
	pieces := chunkPiecesV1(text, limit)
	if len(pieces) == 0 {
		return nil
	}
	out := make([]string, len(pieces))
	for i, p := range pieces {
		out[i] = p.reopen + p.body + p.close
	}
	return out
}

// pieceV1 is one chunk: the fence line that reopens a code block cut by the
// previous chunk, the text itself, and the fence that closes a block cut
// by this one.
type pieceV1 struct{ reopen, body, close string }

// minFenceLimitV1 is the smallest limit at which a cut code block is closed
// and reopened; below it there is no room for the fence lines.
const minFenceLimitV1 = 16

func chunkPiecesV1(text string, limit int) []pieceV1 {
	limit = max(limit, 1)
	var out []pieceV1
	rest := strings.TrimSpace(text)
	reopen := ""
	for rest != "" {
		p := pieceV1{reopen: reopen}
		budget := limit - unitLenV1(reopen)
		if unitLenV1(rest) <= budget {
			p.body = rest
			out = append(out, p)
			break
		}
		cut := breakAtV1(rest, budget)
		fence := openFenceV1(reopen, rest[:cut])
		if fence != "" && limit >= minFenceLimitV1 {
			// Leave room for the closing fence, and never emit a block
			// that holds nothing but its opening line.
			room := budget - unitLenV1(fenceCloseV1)
			cut = breakAtV1(rest, room)
			if fence = openFenceV1(reopen, rest[:cut]); fence != "" && endsWithFenceLineV1(reopen+rest[:cut]) {
				cut = byteOffsetOfUnitsV1(rest, room)
				fence = openFenceV1(reopen, rest[:cut])
			}
		}
		p.body = strings.TrimRightFunc(rest[:cut], unicode.IsSpace)
		reopen = ""
		if fence != "" && limit >= minFenceLimitV1 {
			p.close = fenceCloseV1
			reopen = reopenLineV1(fence, limit) + "\n"
		}
		out = append(out, p)
		rest = strings.TrimLeftFunc(rest[cut:], unicode.IsSpace)
	}
	return out
}

// reopenLineV1 is the line that reopens a cut code block: its original
// opening line ("```go"), or a bare fence when that line is too long for
// the limit.
func reopenLineV1(fence string, limit int) string {
	if unitLenV1(fence)+unitLenV1(fenceCloseV1)+2 <= limit/2 {
		return fence
	}
	return "```"
}

// endsWithFenceLineV1 is true when s's last non-blank line is a fence line.
func endsWithFenceLineV1(s string) bool {
	lines := strings.Split(strings.TrimRightFunc(s, unicode.IsSpace), "\n")
	return isFenceLineV1(lines[len(lines)-1])
}

// breakAtV1 is the byte offset where a chunk of at most budget units of s
// should end: after a paragraph, a line or a word, outside parentheses
// when it can. It never cuts right before a "```" that sits inside a
// line, which would start the next chunk with a code fence that the
// reply does not have.
func breakAtV1(s string, budget int) int {
	window := s[:byteOffsetOfUnitsV1(s, max(budget, 1))]
	for _, outsideParens := range []bool{true, false} {
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := lastBreakV1(s, window, sep, outsideParens); i > 0 {
				return i + len(sep)
			}
		}
	}
	cut := len(window)
	for cut > 0 && makesFenceV1(s, cut) {
		_, w := utf8.DecodeLastRuneInString(s[:cut])
		cut -= w
	}
	if cut == 0 {
		return len(window)
	}
	return cut
}

// lastBreakV1 is the last index of sep in window (at paren depth zero when
// outsideParens) after which s may be cut, or -1.
func lastBreakV1(s, window, sep string, outsideParens bool) int {
	depth, last := 0, -1
	for i := 0; i < len(window); i++ {
		switch window[i] {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		}
		if (depth == 0 || !outsideParens) && strings.HasPrefix(window[i:], sep) && !makesFenceV1(s, i+len(sep)) {
			last = i
		}
	}
	return last
}

// makesFenceV1 is true when cutting s at cut would start the next chunk
// with "```" that is not a fence line in s.
func makesFenceV1(s string, cut int) bool {
	rest := strings.TrimLeftFunc(s[cut:], unicode.IsSpace)
	if !strings.HasPrefix(rest, "```") {
		return false
	}
	pos := len(s) - len(rest)
	line := s[strings.LastIndexByte(s[:pos], '\n')+1:]
	if end := strings.IndexByte(line, '\n'); end >= 0 {
		line = line[:end]
	}
	return !isFenceLineV1(line)
}

// openFenceV1 returns the opening line of the code fence still open at the
// end of reopen+body, or "".
func openFenceV1(reopen, body string) string {
	open := ""
	for _, line := range strings.Split(reopen+body, "\n") {
		if !isFenceLineV1(line) {
			continue
		}
		if open == "" {
			open = strings.TrimSpace(line)
		} else {
			open = ""
		}
	}
	return open
}

func isFenceLineV1(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	return len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```")
}

// unitLenV1 is s's length in UTF-16 code units, the unit of every limit here.
func unitLenV1(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// byteOffsetOfUnitsV1 is the byte offset of the end of s's longest prefix of
// at most n UTF-16 code units, and never less than one whole character.
func byteOffsetOfUnitsV1(s string, n int) int {
	for i, r := range s {
		w := utf16.RuneLen(r)
		if w > n {
			if i == 0 {
				return utf8.RuneLen(r)
			}
			return i
		}
		n -= w
	}
	return len(s)
}
