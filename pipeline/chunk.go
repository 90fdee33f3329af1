package pipeline

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Channel message limits, in characters as the platforms count them
// (UTF-16 code units), used when no limit is configured.
var channelChunkLimits = map[string]int{
	"webchat":  8000,
	"telegram": 4096,
	"discord":  2000,
	"slack":    4000,
}

// DefaultChunkLimit is the limit of a channel with none of its own.
const DefaultChunkLimit = 4000

// ChunkLimitOf is a channel's message limit.
func ChunkLimitOf(channel string) int {
	if n, ok := channelChunkLimits[channel]; ok {
		return n
	}
	return DefaultChunkLimit
}

const fenceClose = "\n```"

// Chunk splits a reply into messages of at most limit characters, in
// order, counted in UTF-16 code units as Telegram, Discord and Slack count
// them (an emoji outside the BMP is two), so a chunk within the limit here
// is within it there; only a single character wider than the limit can
// exceed it. It
// breaks at the last paragraph break that fits, else the last line break,
// else the last white space, else it cuts hard, and never breaks inside
// parentheses (a Markdown link's URL) when another break exists. A chunk
// that would end inside a code fence closes the fence, and the next chunk
// reopens it with the original opening line. No character is lost except
// the white space at a break.
func Chunk(text string, limit int) []string {
	pieces := chunkPieces(text, limit)
	if len(pieces) == 0 {
		return nil
	}
	out := make([]string, len(pieces))
	for i, p := range pieces {
		out[i] = p.reopen + p.body + p.close
	}
	return out
}

// piece is one chunk: the fence line that reopens a code block cut by the
// previous chunk, the text itself, and the fence that closes a block cut
// by this one.
type piece struct{ reopen, body, close string }

// minFenceLimit is the smallest limit at which a cut code block is closed
// and reopened; below it there is no room for the fence lines.
const minFenceLimit = 16

func chunkPieces(text string, limit int) []piece {
	limit = max(limit, 1)
	var out []piece
	rest := strings.TrimSpace(text)
	reopen := ""
	for rest != "" {
		p := piece{reopen: reopen}
		budget := limit - unitLen(reopen)
		if unitLen(rest) <= budget {
			p.body = rest
			out = append(out, p)
			break
		}
		cut := breakAt(rest, budget)
		fence := openFence(reopen, rest[:cut])
		if fence != "" && limit >= minFenceLimit {
			// Leave room for the closing fence, and never emit a block
			// that holds nothing but its opening line.
			room := budget - unitLen(fenceClose)
			cut = breakAt(rest, room)
			if fence = openFence(reopen, rest[:cut]); fence != "" && endsWithFenceLine(reopen+rest[:cut]) {
				cut = byteOffsetOfUnits(rest, room)
				fence = openFence(reopen, rest[:cut])
			}
		}
		p.body = strings.TrimRightFunc(rest[:cut], unicode.IsSpace)
		reopen = ""
		if fence != "" && limit >= minFenceLimit {
			p.close = fenceClose
			reopen = reopenLine(fence, limit) + "\n"
		}
		out = append(out, p)
		rest = strings.TrimLeftFunc(rest[cut:], unicode.IsSpace)
	}
	return out
}

// reopenLine is the line that reopens a cut code block: its original
// opening line ("```go"), or a bare fence when that line is too long for
// the limit.
func reopenLine(fence string, limit int) string {
	if unitLen(fence)+unitLen(fenceClose)+2 <= limit/2 {
		return fence
	}
	return "```"
}

// endsWithFenceLine is true when s's last non-blank line is a fence line.
func endsWithFenceLine(s string) bool {
	lines := strings.Split(strings.TrimRightFunc(s, unicode.IsSpace), "\n")
	return isFenceLine(lines[len(lines)-1])
}

// breakAt is the byte offset where a chunk of at most budget units of s
// should end: after a paragraph, a line or a word, outside parentheses
// when it can. It never cuts right before a "```" that sits inside a
// line, which would start the next chunk with a code fence that the
// reply does not have.
func breakAt(s string, budget int) int {
	window := s[:byteOffsetOfUnits(s, max(budget, 1))]
	for _, outsideParens := range []bool{true, false} {
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := lastBreak(s, window, sep, outsideParens); i > 0 {
				return i + len(sep)
			}
		}
	}
	cut := len(window)
	for cut > 0 && makesFence(s, cut) {
		_, w := utf8.DecodeLastRuneInString(s[:cut])
		cut -= w
	}
	if cut == 0 {
		return len(window)
	}
	return cut
}

// lastBreak is the last index of sep in window (at paren depth zero when
// outsideParens) after which s may be cut, or -1.
func lastBreak(s, window, sep string, outsideParens bool) int {
	depth, last := 0, -1
	for i := 0; i < len(window); i++ {
		switch window[i] {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		}
		if (depth == 0 || !outsideParens) && strings.HasPrefix(window[i:], sep) && !makesFence(s, i+len(sep)) {
			last = i
		}
	}
	return last
}

// makesFence is true when cutting s at cut would start the next chunk
// with "```" that is not a fence line in s.
func makesFence(s string, cut int) bool {
	rest := strings.TrimLeftFunc(s[cut:], unicode.IsSpace)
	if !strings.HasPrefix(rest, "```") {
		return false
	}
	pos := len(s) - len(rest)
	line := s[strings.LastIndexByte(s[:pos], '\n')+1:]
	if end := strings.IndexByte(line, '\n'); end >= 0 {
		line = line[:end]
	}
	return !isFenceLine(line)
}

// openFence returns the opening line of the code fence still open at the
// end of reopen+body, or "".
func openFence(reopen, body string) string {
	open := ""
	for _, line := range strings.Split(reopen+body, "\n") {
		if !isFenceLine(line) {
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

func isFenceLine(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	return len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```")
}

// unitLen is s's length in UTF-16 code units, the unit of every limit here.
func unitLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// byteOffsetOfUnits is the byte offset of the end of s's longest prefix of
// at most n UTF-16 code units, and never less than one whole character.
func byteOffsetOfUnits(s string, n int) int {
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
