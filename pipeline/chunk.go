package pipeline

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// DefaultChunkLimit is the message limit of a platform that declares
// none of its own, in UTF-16 code units.
const DefaultChunkLimit = 4000

// minFenceLimit is the smallest limit at which code blocks are kept: below
// it there is no room for the fence lines, and blocks are cut as text.
const minFenceLimit = 16

// Chunk splits a reply into messages of at most limit characters, in
// order, counted in UTF-16 code units as the chat platforms count them
// (an emoji outside the BMP is two); only a single character wider than
// the limit can exceed it. A rendering that only drops the Markdown's
// marks (an HTML one) only shortens a chunk, so it fits once rendered
// too; FuzzChunk measures both. A platform whose rendering may lengthen
// text cuts with a chunker of its own built on this one. It breaks at the last paragraph break that fits, else the
// last line break, else the last white space (outside parentheses, a
// Markdown link's URL, before inside them), else it cuts hard.
//
// Code fences follow CommonMark (``` or ~~~, three or more, up to three
// spaces of indentation; a block is closed by a fence of the same
// character at least as long, with nothing after it). A chunk never ends
// inside a fence line. A chunk that ends inside a code block closes it
// with a fence of its own, and the next chunk reopens it with the block's
// opening line as written (info string and indentation included); there
// the cut drops no white space but the one line break it falls on. A cut
// never turns part of a line into a fence line. Outside code blocks the
// white space at a break is dropped, and a chunk keeps the indentation of
// its first line unless that is all that fits. Apart from that and the
// fence lines it adds, the chunks put together are the reply.
//
// A block whose fence lines leave no room in a chunk (its opening line, a
// character and a closing fence, or its opening and closing lines as
// written, over the limit) is kept whole in one chunk when it fits, and
// cut as text when it does not. Under a limit of 16 every block is cut as
// text. A line holding a run of backticks or tildes wider than half the
// limit is cut as if it held no fences.
func Chunk(text string, limit int) []string {
	c := newChunker(text, max(limit, 1))
	var out []string
	pos, open := c.start, -1
	for pos < c.end {
		reopen := ""
		if open >= 0 {
			reopen = c.blocks[open].openLine + "\n"
		}
		budget := c.limit - unitLen(reopen)
		if c.width(pos, c.end) <= budget && c.fragmentsKept(pos, c.end) {
			out = append(out, reopen+text[pos:c.end])
			break
		}
		k, ok := c.bestCut(pos, budget)
		if indented := strings.TrimLeftFunc(text[pos:c.end], unicode.IsSpace); !ok && open < 0 && len(indented) < c.end-pos {
			pos = c.end - len(indented) // only its indentation fits: drop it
			continue
		}
		if !ok {
			k = c.hardCut(pos, budget)
		}
		chunk := reopen + text[pos:k.end]
		if k.block >= 0 {
			chunk += "\n" + c.blocks[k.block].fence.closingLine()
		}
		out = append(out, chunk)
		pos, open = k.next, k.block
	}
	return out
}

// blockMode is how the chunker treats a code block at a given limit.
type blockMode uint8

const (
	// keepBlock blocks are closed at a cut and reopened in the next chunk.
	keepBlock blockMode = iota
	// wholeBlock blocks are never cut: their fence lines leave no room
	// for code in a chunk, but the whole block fits in one.
	wholeBlock
	// plainBlock blocks are cut as text: nothing else fits.
	plainBlock
)

// chunkBlock is a code block as the chunker sees it.
type chunkBlock struct {
	codeBlock
	openLine string // its opening line as written, which reopens it
	mode     blockMode
}

// chunker holds one reply's lines and code blocks for Chunk.
type chunker struct {
	text       string
	limit      int
	lines      []mdLine
	blocks     []chunkBlock
	units      []int // units[i] is the width of text[:i] at a rune boundary i
	start, end int   // the reply without its leading blank lines and trailing white space
	// nextNonBlank[i] is the index of the first line after line i that is
	// not white space, or -1.
	nextNonBlank []int
	// longRun[i] is true when line i holds a run of backticks or tildes
	// wider than half the limit. A piece of such a run starting a chunk
	// reads as a fence, but keeping it from doing so would take chunks of
	// two characters (thousands, for a degenerate reply), so that line is
	// cut as if it held no fences.
	longRun []bool
}

func newChunker(text string, limit int) *chunker {
	c := &chunker{text: text, limit: limit, units: make([]int, len(text)+1)}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		for j := i + 1; j < i+size; j++ {
			c.units[j] = c.units[i] // inside a character: never a cut
		}
		c.units[i+size] = c.units[i] + utf16.RuneLen(r) // an invalid byte is one
		i += size
	}
	lines, blocks := markdownLines(text)
	c.lines = lines
	for _, b := range blocks {
		opener := lines[b.opener]
		c.blocks = append(c.blocks, chunkBlock{codeBlock: b, openLine: text[opener.start:opener.end]})
	}
	trimmed := strings.TrimLeftFunc(text, unicode.IsSpace)
	c.start = strings.LastIndexByte(text[:len(text)-len(trimmed)], '\n') + 1
	end, kept := c.trimmedEnd()
	c.end = end
	c.nextNonBlank = make([]int, len(lines))
	next := -1
	for i := len(lines) - 1; i >= 0; i-- {
		c.nextNonBlank[i] = next
		if strings.TrimSpace(text[lines[i].start:lines[i].end]) != "" {
			next = i
		}
	}
	for i := range c.blocks {
		c.blocks[i].mode = c.modeOf(c.blocks[i])
	}
	if kept >= 0 && c.blocks[kept].mode == plainBlock {
		// cut as text: its last line may lose its white space.
		c.end = len(strings.TrimRightFunc(text, unicode.IsSpace))
	}
	c.longRun = make([]bool, len(lines))
	for i, l := range lines {
		c.longRun[i] = 2*longestFenceRun(text[l.start:l.end]) > limit
	}
	return c
}

// trimmedEnd is where the reply ends without its trailing white space,
// and the block whose last line keeps its own (or -1): trimming it would
// make the last line of a block left open its closing fence.
func (c *chunker) trimmedEnd() (int, int) {
	end := len(strings.TrimRightFunc(c.text, unicode.IsSpace))
	if end == 0 {
		return 0, -1
	}
	l := c.lines[lineAt(c.lines, end-1)]
	if l.kind != codeLine {
		return end, -1
	}
	if f, ok := parseFence(c.text[l.start:end]); ok && f.closes(c.blocks[l.block].fence) {
		return l.end, l.block
	}
	return end, -1
}

// modeOf decides whether b can be closed and reopened: a chunk must hold
// its opening line, a character of code and a closing fence, and its
// opening line with its closing line as written.
func (c *chunker) modeOf(b chunkBlock) blockMode {
	reopen := unitLen(b.openLine) + 1
	room := reopen+2+1+b.fence.run <= c.limit
	end := c.end
	if b.closer >= 0 {
		closer := c.lines[b.closer]
		end = closer.start + len(strings.TrimRightFunc(c.text[closer.start:closer.end], unicode.IsSpace))
		room = room && reopen+c.width(closer.start, end) <= c.limit
	}
	switch {
	case room && c.limit >= minFenceLimit:
		return keepBlock
	case c.limit >= minFenceLimit && c.width(c.lines[b.opener].start, end) <= c.limit:
		return wholeBlock
	}
	return plainBlock
}

// longestFenceRun is the length of the longest run of backticks or tildes
// in line.
func longestFenceRun(line string) int {
	longest, run := 0, 0
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] != '`' && line[i] != '~':
			run = 0
		case i > 0 && line[i] == line[i-1]:
			run++
		default:
			run = 1
		}
		longest = max(longest, run)
	}
	return longest
}

// width is the length of text[from:to] in UTF-16 code units.
func (c *chunker) width(from, to int) int { return c.units[to] - c.units[from] }

// unitLen is s's length in UTF-16 code units, the unit of every limit here.
func unitLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
