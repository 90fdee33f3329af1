package pipeline

import (
	"sort"
	"strings"
)

// fence is a CommonMark code fence line: up to three spaces, then a run of
// three or more backticks or tildes, then the info string.
type fence struct {
	char   byte // '`' or '~'
	run    int
	indent int
	info   string // trimmed of spaces and tabs
}

// parseFence reads line (without its "\n") as a fence line.
func parseFence(line string) (fence, bool) {
	line = strings.TrimSuffix(line, "\r")
	trimmed := strings.TrimLeft(line, " ")
	f := fence{indent: len(line) - len(trimmed)}
	if f.indent > 3 || trimmed == "" || (trimmed[0] != '`' && trimmed[0] != '~') {
		return fence{}, false
	}
	f.char = trimmed[0]
	for f.run < len(trimmed) && trimmed[f.run] == f.char {
		f.run++
	}
	if f.run < 3 {
		return fence{}, false
	}
	f.info = strings.Trim(trimmed[f.run:], " \t")
	return f, true
}

// opens reports whether f can open a code block: a backtick fence's info
// string may not hold a backtick (the line is inline code then).
func (f fence) opens() bool {
	return f.char == '~' || !strings.Contains(f.info, "`")
}

// closes reports whether f closes the block that open opened: the same
// character, at least as long, and nothing after it.
func (f fence) closes(open fence) bool {
	return f.char == open.char && f.run >= open.run && f.info == ""
}

// closingLine is the shortest line that closes the block f opens.
func (f fence) closingLine() string { return strings.Repeat(string(f.char), f.run) }

type lineKind uint8

const (
	textLine lineKind = iota
	openerLine
	codeLine // inside a fenced code block
	closerLine
)

// mdLine is one line of a reply: text[start:end], end being the index of
// its "\n" or the end of the text.
type mdLine struct {
	start, end int
	kind       lineKind
	block      int // index into the reply's code blocks, -1 for text lines
}

// codeBlock is a fenced code block: its opening fence and the indexes of
// its opening and closing lines (closer -1 when it runs to the end).
type codeBlock struct {
	fence          fence
	opener, closer int
}

// markdownLines splits text into lines and finds its fenced code blocks
// as CommonMark does outside containers (block quotes and list items are
// not followed: a fence inside one counts as a top-level fence).
func markdownLines(text string) ([]mdLine, []codeBlock) {
	var lines []mdLine
	var blocks []codeBlock
	open := -1
	for start := 0; start <= len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		l := mdLine{start: start, end: end, kind: textLine, block: -1}
		f, isFence := parseFence(text[start:end])
		switch {
		case open >= 0 && isFence && f.closes(blocks[open].fence):
			l.kind, l.block = closerLine, open
			blocks[open].closer = len(lines)
			open = -1
		case open >= 0:
			l.kind, l.block = codeLine, open
		case isFence && f.opens():
			open = len(blocks)
			blocks = append(blocks, codeBlock{fence: f, opener: len(lines), closer: -1})
			l.kind, l.block = openerLine, open
		}
		lines = append(lines, l)
		start = end + 1
	}
	return lines, blocks
}

// lineAt is the index of the line holding byte offset pos (a line's "\n"
// belongs to it).
func lineAt(lines []mdLine, pos int) int {
	return sort.Search(len(lines), func(i int) bool { return lines[i].start > pos }) - 1
}
