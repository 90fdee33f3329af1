package pipeline_test

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the oracle for Chunk's rules, written apart from the
// chunker (its own CommonMark fence reading) so that a shared mistake
// cannot hide.

// width is how wide one channel counts a chunk as it sends it.
type width struct {
	name string
	of   func(chunk string) int
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// checkChunks reports the first of Chunk's rules that chunks, cut from
// text at limit, break:
//   - no chunk is blank or wider than limit by any of widths (unless it is
//     a single character);
//   - from limit 16 on, each chunk's code blocks are closed in it by a
//     fence of the same character at least as long (the last chunk may
//     leave open a block the reply leaves open); every character of a
//     chunk that comes from the reply is text, fence or code of the same
//     block (character, indentation, info string) in the chunk as in the
//     reply, so a reopened block keeps its opening line; a cut inside a
//     block drops nothing but the line break it falls on;
//   - the chunks put together, less the fence lines the chunker added
//     and the white space at cuts outside code, are the reply.
//
// Blocks whose fence lines leave no room in a chunk and that do not fit
// in one, and runs of backticks or tildes wider than half the limit (see
// Chunk), cannot keep the fence rules; where the reply has one, only the
// widths and the text are checked.
func checkChunks(text string, limit int, chunks []string, widths ...width) error {
	for i, c := range chunks {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("chunk %d is blank: %q", i, c)
		}
		for _, w := range widths {
			if n := w.of(c); n > limit && utf8.RuneCountInString(c) > 1 {
				return fmt.Errorf("chunk %d is %d wide %s, over the limit %d: %q", i, n, w.name, limit, c)
			}
		}
	}
	r := &reassembly{text: text, chunks: chunks, dead: map[reassemblyState]bool{}}
	r.doc = readMarkdown(text)
	r.fenceRules = limit >= 16 && !r.doc.hasUnkeepableBlock(limit) && !hasLongFenceRun(text, limit)
	if !r.from(reassemblyState{}) {
		return r.err
	}
	return nil
}

// reassembly puts a reply back together from its chunks, depth first over
// the ways a chunk's first and last lines can be fence lines it added.
type reassembly struct {
	text       string
	chunks     []string
	doc        markdown
	fenceRules bool
	dead       map[reassemblyState]bool
	err        error // the failure of the chunk furthest in
	errChunk   int
}

type reassemblyState struct {
	chunk, pos int    // the next chunk, and where the reply goes on
	block      string // the class of the code block the last chunk closed, or ""
}

func (r *reassembly) fail(chunk int, format string, args ...any) bool {
	if r.err == nil || chunk >= r.errChunk {
		r.err = fmt.Errorf("chunk %d of %d: %s\nchunks: %q", chunk, len(r.chunks), fmt.Sprintf(format, args...), r.chunks)
		r.errChunk = chunk
	}
	return false
}

func (r *reassembly) from(s reassemblyState) bool {
	if s.chunk == len(r.chunks) {
		if strings.TrimSpace(r.text[s.pos:]) != "" {
			return r.fail(s.chunk-1, "the reply goes on after the last chunk: %q", r.text[s.pos:])
		}
		return true
	}
	if r.dead[s] {
		return false
	}
	r.dead[s] = true // until it succeeds, which ends the search
	c := r.chunks[s.chunk]
	local := readMarkdown(c)
	openings := r.addedOpenings(s, c, local)
	if len(openings) == 0 {
		return r.fail(s.chunk, "it does not reopen the code block the chunk before it closed")
	}
	for _, open := range openings {
		for _, end := range r.addedClosings(c) {
			if open > end || open == end && open == 0 {
				continue // a reopened block may hold just an empty line
			}
			body := c[open:end]
			for _, at := range r.starts(s) {
				if !strings.HasPrefix(r.text[at:], body) {
					continue
				}
				if next, ok := r.fits(s, local, open, end, at); ok && r.from(next) {
					return true
				}
			}
		}
	}
	if r.err != nil && r.errChunk >= s.chunk {
		return false // a more telling failure is on record
	}
	if s.block != "" && r.fenceRules {
		return r.fail(s.chunk, "inside a code block a cut may drop only the line break it falls on; the reply goes on with %q", cut(r.text[s.pos:], 40))
	}
	return r.fail(s.chunk, "its text is not the reply's where it goes on: %q", cut(r.text[s.pos:], 40))
}

// addedOpenings are where the chunk's own text may start: after a first
// line that reopens the block the previous chunk closed.
func (r *reassembly) addedOpenings(s reassemblyState, c string, local markdown) []int {
	first := strings.IndexByte(c, '\n')
	reopens := first >= 0 && local.class[0] == classFence
	switch {
	case !r.fenceRules && reopens:
		return []int{0, first + 1}
	case !r.fenceRules, s.block == "":
		return []int{0}
	case reopens:
		return []int{first + 1}
	}
	return nil
}

// addedClosings are where the chunk's own text may end: before a last
// line that closes the block it ends in.
func (r *reassembly) addedClosings(c string) []int {
	last := strings.LastIndexByte(c, '\n')
	if last >= 0 && fenceLine.MatchString(c[last+1:]) {
		return []int{len(c), last}
	}
	return []int{len(c)}
}

// starts are where the next chunk's text may start in the reply: after
// any white space, but inside a block only after the one line break the
// cut fell on, or right at the cut in the middle of a line.
func (r *reassembly) starts(s reassemblyState) []int {
	t, pos := r.text, s.pos
	if s.block != "" && r.fenceRules {
		var out []int
		if pos > 0 && pos < len(t) && t[pos-1] != '\n' && t[pos] != '\n' {
			out = append(out, pos)
		}
		if pos < len(t) && t[pos] == '\n' {
			out = append(out, pos+1)
		}
		return out
	}
	out := []int{pos}
	for i, ch := range t[pos:] {
		if !unicode.IsSpace(ch) {
			break
		}
		out = append(out, pos+i+utf8.RuneLen(ch))
	}
	return out
}

// fits checks the chunk read as c[open:end] = reply[at:...] against the
// fence rules, and returns the state after it.
func (r *reassembly) fits(s reassemblyState, local markdown, open, end, at int) (reassemblyState, bool) {
	c := r.chunks[s.chunk]
	next := reassemblyState{chunk: s.chunk + 1, pos: at + end - open}
	if !r.fenceRules {
		return next, true
	}
	if open > 0 {
		if reopened := classOfOpening(c[:open-1]); reopened != s.block {
			return next, r.fail(s.chunk, "it reopens the block as %q, which opened as %q", reopened, s.block)
		}
	}
	for i := open; i < end; i++ {
		if got, want := local.class[i], r.doc.class[at+i-open]; got != want {
			return next, r.fail(s.chunk, "%q at its byte %d is %s in the chunk but %s in the reply", lineOf(c, i), i, got, want)
		}
	}
	switch {
	case end < len(c):
		if local.openAtEnd {
			return next, r.fail(s.chunk, "its added closing fence %q does not close the block", c[end+1:])
		}
		next.block = r.doc.class[min(next.pos, len(r.text)-1)]
		if !strings.HasPrefix(next.block, "code") {
			return next, r.fail(s.chunk, "it adds a closing fence %q outside a code block", c[end+1:])
		}
	case local.openAtEnd && !(s.chunk == len(r.chunks)-1 && r.doc.openAtEnd):
		return next, r.fail(s.chunk, "it leaves a code block open")
	}
	return next, true
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func lineOf(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}

// markdown is a document read for its code fences: each byte's class
// (classText, classFence for an opening or closing fence line, or the
// class of the code block it is in) and the blocks.
type markdown struct {
	source    string
	class     []string
	blocks    []mdBlock
	openAtEnd bool
}

type mdBlock struct {
	start, end    int // from the opening line to the end of the closing one (or the document)
	openLine      string
	run           int
	closeLineTrim string // "" when the block runs to the end
}

const (
	classText  = "text"
	classFence = "fence"
)

// fenceLine is a CommonMark fence line: up to three spaces of indentation,
// three or more backticks or tildes, and an info string.
var fenceLine = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})(.*?)\r?$")

func readMarkdown(doc string) markdown {
	md := markdown{source: doc, class: make([]string, len(doc))}
	var open []string // the open block's fence submatches
	block := ""
	for start := 0; start <= len(doc); {
		end := strings.IndexByte(doc[start:], '\n') + start
		if end < start {
			end = len(doc)
		}
		line := doc[start:end]
		m := fenceLine.FindStringSubmatch(line)
		class := block
		switch {
		case closes(m, open):
			class, block, open = classFence, "", nil
			b := &md.blocks[len(md.blocks)-1]
			b.closeLineTrim = strings.TrimRightFunc(line, unicode.IsSpace)
			b.end = start + len(b.closeLineTrim)
		case open != nil:
		case m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`")):
			class, open, block = classFence, m, classOfOpening(line)
			md.blocks = append(md.blocks, mdBlock{start: start, end: len(doc), openLine: line, run: len(m[2])})
		default:
			class = classText
		}
		for i := start; i < end || (i == end && end < len(doc)); i++ {
			md.class[i] = class
		}
		start = end + 1
	}
	md.openAtEnd = open != nil
	if md.openAtEnd {
		b := &md.blocks[len(md.blocks)-1]
		// To the end of the reply without its trailing white space, or
		// with that of its last line if trimming it makes a closing fence.
		b.end = len(strings.TrimRightFunc(doc, unicode.IsSpace))
		lineStart := strings.LastIndexByte(doc[:b.end], '\n') + 1
		if lineStart > b.start && closes(fenceLine.FindStringSubmatch(doc[lineStart:b.end]), open) {
			if eol := strings.IndexByte(doc[b.end:], '\n'); eol >= 0 {
				b.end += eol
			} else {
				b.end = len(doc)
			}
		}
	}
	return md
}

// closes reports whether the fence line m (fenceLine's submatches, nil
// for another line) closes the block that open opened.
func closes(m, open []string) bool {
	return open != nil && m != nil && m[2][0] == open[2][0] && len(m[2]) >= len(open[2]) && strings.Trim(m[3], " \t") == ""
}

// classOfOpening is the class of the code in a block that line opens:
// what decides how it shows (fence character, indentation, info string).
func classOfOpening(line string) string {
	m := fenceLine.FindStringSubmatch(line)
	if m == nil {
		return classText
	}
	return fmt.Sprintf("code %c indent %d info %q", m[2][0], len(m[1]), strings.Trim(m[3], " \t"))
}

// hasUnkeepableBlock is true when a block's fence lines leave no room for
// code in a chunk (its opening line, a line break, a character, a line
// break and a closing fence; or its opening and closing lines as written
// are over limit) and the block is wider than limit.
func (md markdown) hasUnkeepableBlock(limit int) bool {
	for _, b := range md.blocks {
		reopen := utf16Len(b.openLine) + 1
		room := reopen+3+b.run <= limit && reopen+utf16Len(b.closeLineTrim) <= limit
		if !room && md.width(b) > limit {
			return true
		}
	}
	return false
}

func (md markdown) width(b mdBlock) int { return utf16Len(md.source[b.start:b.end]) }

var fenceRun = regexp.MustCompile("`+|~+")

// hasLongFenceRun is true when text holds a run of backticks or tildes
// wider than half the limit.
func hasLongFenceRun(text string, limit int) bool {
	for _, run := range fenceRun.FindAllString(text, -1) {
		if 2*len(run) > limit {
			return true
		}
	}
	return false
}
