package pipeline

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/replyflow/replyflow/pipeline/mdscan"
)

// directiveToken is one directive in a message: text[start:end] is what
// leaves the text with it (the name, a bot suffix and colon, its words).
type directiveToken struct {
	start, end int
	name       string // lower-case, a key of directiveCommands
	args       []string
}

// findDirectives returns the directives of text in order: a directive's
// name after "/" at the start of a word (so not inside a URL or a path),
// followed by white space, a colon or "@bot", outside fenced code blocks
// and code spans. It stops after maxDirectives+1 of them, which is
// already too many.
func findDirectives(text string) []directiveToken {
	lines, _ := markdownLines(text)
	var out []directiveToken
	for i := 0; i < len(lines) && len(out) <= maxDirectives; {
		if lines[i].kind != textLine {
			i++
			continue
		}
		j := i
		for j < len(lines) && lines[j].kind == textLine {
			j++
		}
		// A code span may run over the lines of one stretch of text,
		// never into a fenced block.
		out = scanText(text[:lines[j-1].end], lines[i].start, out)
		i = j
	}
	return out
}

// scanText appends the directives of text[from:] to out.
func scanText(text string, from int, out []directiveToken) []directiveToken {
	for i := from; i < len(text) && len(out) <= maxDirectives; {
		switch {
		case text[i] == '`':
			_, i, _ = mdscan.CodeSpan(text, i)
		case text[i] == '/' && atWordStart(text, i):
			lineEnd := len(text)
			if n := strings.IndexByte(text[i:], '\n'); n >= 0 {
				lineEnd = i + n
			}
			if tok, ok := readDirective(text[:lineEnd], i); ok {
				out = append(out, tok)
				i = tok.end
				continue
			}
			i++
		default:
			i++
		}
	}
	return out
}

// readDirective reads the directive at line[i] ("/"), if it is one, with
// its words from the rest of the line: one, or for /queue the first and
// then those of the form key:value (at most maxDirectives in all).
func readDirective(line string, i int) (directiveToken, bool) {
	j := i + 1
	for j < len(line) && isASCIILetter(line[j]) {
		j++
	}
	name := strings.ToLower(line[i+1 : j])
	if _, ok := directiveCommands[name]; !ok {
		return directiveToken{}, false
	}
	if j < len(line) && line[j] == '@' { // a directive addressed to a bot: /think@my_bot
		for j < len(line) && line[j] != ':' && !spaceAt(line, j) {
			j++
		}
	}
	colon := j < len(line) && line[j] == ':'
	if colon {
		j++
	}
	if j < len(line) && !spaceAt(line, j) && !colon {
		return directiveToken{}, false // "/thinking", "/think/high", "/think,"
	}
	tok := directiveToken{start: i, end: j, name: name}
	limit := 1
	if name == "queue" {
		limit = maxDirectives
	}
	for len(tok.args) < limit {
		k := j
		for k < len(line) && spaceAt(line, k) {
			_, size := utf8.DecodeRuneInString(line[k:])
			k += size
		}
		end := k
		for end < len(line) && !spaceAt(line, end) {
			end++
		}
		word := line[k:end]
		if word == "" || (len(tok.args) > 0 && !strings.Contains(word, ":")) {
			break
		}
		tok.args = append(tok.args, word)
		tok.end, j = end, end
	}
	return tok, true
}

func isASCIILetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

// atWordStart is true at the start of text or after white space.
func atWordStart(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return unicode.IsSpace(r)
}

func spaceAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r)
}

// isLineSpace is white space that does not end a line.
func isLineSpace(r rune) bool { return r != '\n' && unicode.IsSpace(r) }

// withoutDirectives is text with toks taken out and the white space
// around them tidied; see joinAround.
func withoutDirectives(text string, toks []directiveToken) string {
	out := text[:toks[0].start]
	for k, tok := range toks {
		next := len(text)
		if k+1 < len(toks) {
			next = toks[k+1].start
		}
		out = joinAround(out, text[tok.end:next])
	}
	return strings.TrimSpace(out)
}

// joinAround joins the text before a directive taken out to the text
// after it: one space between words of a line, none at a line's start or
// end, and no empty line where a line held only directives.
func joinAround(before, after string) string {
	before = strings.TrimRightFunc(before, isLineSpace)
	after = strings.TrimLeftFunc(after, isLineSpace)
	lineStart := before == "" || strings.HasSuffix(before, "\n")
	switch {
	case lineStart && strings.HasPrefix(after, "\n"):
		return before + after[1:]
	case lineStart || after == "" || strings.HasPrefix(after, "\n"):
		return before + after
	}
	return before + " " + after
}
