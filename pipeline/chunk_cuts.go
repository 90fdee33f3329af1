package pipeline

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cut is a place to end a chunk: its text ends at end, the next chunk's
// starts at next (what lies between is dropped white space), and block
// is the code block the chunk ends inside, closed by an added fence and
// reopened by the next chunk, or -1.
type cut struct {
	end, next, block int
	rank             cutRank
}

// cutRank orders cuts from worst to best; among cuts of one rank the
// latest wins.
type cutRank uint8

const (
	// rankEmptyBlock ends a chunk right before a block's closing fence,
	// leaving the next chunk an empty block: a last resort.
	rankEmptyBlock cutRank = iota
	rankHard
	rankSpaceInParens
	rankSpace
	rankLine
	rankParagraph
)

// bestCut is where a chunk starting at pos, with budget units for its
// text and closing fence, ends; false when nothing fits.
func (c *chunker) bestCut(pos, budget int) (cut, bool) {
	cuts := c.cuts(pos, budget)
	sort.Slice(cuts, func(i, j int) bool {
		if cuts[i].rank != cuts[j].rank {
			return cuts[i].rank > cuts[j].rank
		}
		return cuts[i].end > cuts[j].end
	})
	// Better a cut that lets the next chunk start its line as text (a
	// chunk starting "~~~ is a fence" would be code) than a later one.
	for _, lookAhead := range []bool{true, false} {
		for _, k := range cuts {
			if c.fragmentsKept(pos, k.end) && (!lookAhead || c.startKept(k.next)) {
				return k, true
			}
		}
	}
	return cut{}, false
}

// startKept reports whether a chunk starting at pos keeps the meaning of
// the rest of the line it starts in.
func (c *chunker) startKept(pos int) bool {
	li := lineAt(c.lines, pos)
	l := c.lines[li]
	return pos == l.start || c.fragmentKept(li, pos, l.end)
}

// hardCut is the cut of last resort, for a character wider than the limit
// (below 2): as much as fits, and at least that character. Other limits
// never need it (a character or two always makes a valid cut).
func (c *chunker) hardCut(pos, budget int) cut {
	end := pos
	for end < c.end {
		_, size := utf8.DecodeRuneInString(c.text[end:])
		if end > pos && c.width(pos, end+size) > budget {
			break
		}
		end += size
	}
	return cut{end: end, next: end, block: -1}
}

// cuts lists the places where a chunk starting at pos may end within
// budget, with their rank.
func (c *chunker) cuts(pos, budget int) []cut {
	var out []cut
	for li := lineAt(c.lines, pos); li < len(c.lines); li++ {
		l := c.lines[li]
		from := max(l.start, pos)
		if from >= c.end || c.width(pos, from) > budget {
			break
		}
		switch c.kindOf(li) {
		case textLine:
			out = c.textCuts(out, pos, budget, li)
		case codeLine:
			out = c.codeCuts(out, pos, budget, li)
		case closerLine:
			out = c.lineBreak(out, pos, budget, li)
		}
	}
	return out
}

// kindOf is line li's kind as the chunker treats it: a plain block's lines
// are text, and a whole block has no place to cut but after its closing
// fence (openerLine stands for "no cut here").
func (c *chunker) kindOf(li int) lineKind {
	l := c.lines[li]
	if l.block < 0 {
		return l.kind
	}
	switch mode := c.blocks[l.block].mode; {
	case mode == plainBlock:
		return textLine
	case mode == wholeBlock && l.kind != closerLine:
		return openerLine
	}
	return l.kind
}

// textCuts adds the cuts inside text line li and at its end: at white
// space (ranked by whether it lies inside parentheses) and between any two
// other characters.
func (c *chunker) textCuts(out []cut, pos, budget, li int) []cut {
	l := c.lines[li]
	from := max(l.start, pos)
	depth, prevSpace := 0, true
	for i, r := range c.text[from:l.end] {
		p := from + i
		if c.width(pos, p) > budget {
			return out
		}
		space := unicode.IsSpace(r)
		switch {
		case p == from:
		case space && !prevSpace:
			next := l.end - len(strings.TrimLeftFunc(c.text[p:l.end], unicode.IsSpace))
			rank := rankSpace
			if depth > 0 {
				rank = rankSpaceInParens
			}
			if next < l.end {
				out = append(out, cut{end: p, next: next, block: -1, rank: rank})
			}
		case !space && !prevSpace:
			out = append(out, cut{end: p, next: p, block: -1, rank: rankHard})
		}
		switch r {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		}
		prevSpace = space
	}
	return c.lineBreak(out, pos, budget, li)
}

// lineBreak adds the cut after line li, a text line or a closing fence:
// the chunk drops the line's trailing white space and any blank lines, and
// the next one starts with the next line, indentation and all.
func (c *chunker) lineBreak(out []cut, pos, budget, li int) []cut {
	l := c.lines[li]
	from := max(l.start, pos)
	end := from + len(strings.TrimRightFunc(c.text[from:l.end], unicode.IsSpace))
	nl := c.nextNonBlank[li]
	if end == from || nl < 0 || c.lines[nl].start >= c.end || c.width(pos, end) > budget {
		return out
	}
	rank := rankLine
	if nl > li+1 {
		rank = rankParagraph
	}
	return append(out, cut{end: end, next: c.lines[nl].start, block: -1, rank: rank})
}

// codeCuts adds the cuts inside code line li of a kept block and at its
// end. Each leaves the block open, to be closed by an added fence, and
// drops no white space but the line break it falls on.
func (c *chunker) codeCuts(out []cut, pos, budget, li int) []cut {
	l := c.lines[li]
	from := max(l.start, pos)
	b := l.block
	room := budget - 1 - c.blocks[b].fence.run
	prev := rune(0)
	for i, r := range c.text[from:l.end] {
		p := from + i
		if c.width(pos, p) > room {
			return out
		}
		if p > from {
			rank := rankHard
			if (prev == ' ' || prev == '\t') && r != ' ' && r != '\t' {
				rank = rankSpace
			}
			out = append(out, cut{end: p, next: p, block: b, rank: rank})
		}
		prev = r
	}
	// A blank line may be all a chunk holds of a block: a blank line and
	// a character may not fit after a long opening line.
	if l.end >= c.end || c.width(pos, l.end) > room || (l.end == pos && l.start < pos) {
		return out
	}
	rank := rankLine
	if c.lines[li+1].kind == closerLine {
		rank = rankEmptyBlock
	}
	return append(out, cut{end: l.end, next: l.end + 1, block: b, rank: rank})
}

// fragmentsKept reports whether a chunk of text[pos:end] keeps the meaning
// of the lines it cuts: its first line when it starts inside one, and its
// last when it ends inside one.
func (c *chunker) fragmentsKept(pos, end int) bool {
	first, last := lineAt(c.lines, pos), lineAt(c.lines, end)
	if first == last {
		l := c.lines[first]
		return (pos == l.start && end == l.end) || c.fragmentKept(first, pos, end)
	}
	head, tail := c.lines[first], c.lines[last]
	return (pos == head.start || c.fragmentKept(first, pos, head.end)) &&
		(end == tail.end || c.fragmentKept(last, tail.start, end))
}

// fragmentKept reports whether text[from:to], a part of line li that a cut
// makes a whole line of a chunk, parses as the line does: in text, not as
// an opening fence; in code, not as the closing fence of its block.
func (c *chunker) fragmentKept(li, from, to int) bool {
	f, ok := parseFence(c.text[from:to])
	if !ok || c.longRun[li] {
		return true
	}
	switch c.kindOf(li) {
	case textLine:
		return !f.opens()
	case codeLine:
		return !f.closes(c.blocks[c.lines[li].block].fence)
	}
	return true
}
