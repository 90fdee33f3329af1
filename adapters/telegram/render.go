package telegram

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// RenderHTML turns the Markdown an agent writes into Telegram's HTML
// subset: code fences become <pre><code>, `code` <code>, **bold** and
// __bold__ <b>, *italic* and _italic_ <i>, ~~strike~~ <s>, [text](url) a
// link (http, https, tg and mailto only), headings bold lines, "> " lines
// a <blockquote>, and list markers bullets. Everything else is escaped.
//
// Two properties hold for every input, and the fuzzer checks both: the
// tags are balanced and from Telegram's set, and the visible text is never
// longer than the Markdown (markup only ever disappears), so a chunk cut
// to Telegram's limit in Markdown fits once rendered.
func RenderHTML(markdown string) string {
	lines := strings.Split(strings.ToValidUTF8(markdown, "\uFFFD"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		if i > 0 {
			out.WriteByte('\n')
		}
		switch {
		case isFence(lines[i]):
			i = renderFence(&out, lines, i)
		case isQuote(lines[i]):
			i = renderQuote(&out, lines, i)
		default:
			renderLine(&out, lines[i])
			i++
		}
	}
	return out.String()
}

// PlainText is what is sent when Telegram cannot parse a chunk's HTML:
// the Markdown as written, without a parse mode, so nothing is lost.
func PlainText(markdown string) string { return strings.ToValidUTF8(markdown, "\uFFFD") }

// VisibleLength is the length Telegram counts against its limits: the
// text of an HTML message without its tags and with entities decoded, in
// UTF-16 code units.
func VisibleLength(htmlText string) int {
	var text strings.Builder
	inTag := false
	for _, r := range htmlText {
		switch {
		case r == '<':
			inTag = true
		case r == '>' && inTag:
			inTag = false
		case !inTag:
			text.WriteRune(r)
		}
	}
	n := 0
	for _, r := range html.UnescapeString(text.String()) {
		n += utf16.RuneLen(r)
	}
	return n
}

func isFence(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	return len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```")
}

// renderFence writes the code block opening at lines[start] and returns
// the index of the line after it. A block never closed runs to the end.
func renderFence(out *strings.Builder, lines []string, start int) int {
	lang := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[start]), "`"))
	if f := strings.Fields(lang); len(f) > 0 {
		lang = f[0]
	}
	out.WriteString("<pre>")
	if isLanguage(lang) {
		out.WriteString(`<code class="language-` + lang + `">`)
	} else {
		out.WriteString("<code>")
	}
	end := start + 1
	for ; end < len(lines) && !isFence(lines[end]); end++ {
		if end > start+1 {
			out.WriteByte('\n')
		}
		out.WriteString(escape(lines[end]))
	}
	out.WriteString("</code></pre>")
	if end < len(lines) {
		end++ // the closing fence
	}
	return end
}

func isLanguage(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("+-#._", r))) {
			return false
		}
	}
	return true
}

// quoteBody is a quote line's text after "> ", or "" for other lines.
func quoteBody(line string) string {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || !strings.HasPrefix(trimmed, ">") {
		return ""
	}
	return strings.TrimPrefix(trimmed[1:], " ")
}

func isQuote(line string) bool {
	return quoteBody(line) != "" || strings.TrimSpace(line) == ">"
}

func renderQuote(out *strings.Builder, lines []string, start int) int {
	out.WriteString("<blockquote>")
	end := start
	for ; end < len(lines) && isQuote(lines[end]); end++ {
		if end > start {
			out.WriteByte('\n')
		}
		renderLine(out, quoteBody(lines[end]))
	}
	out.WriteString("</blockquote>")
	return end
}

func renderLine(out *strings.Builder, line string) {
	trimmed := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(trimmed)]
	if level := headingLevel(trimmed); level > 0 {
		out.WriteString("<b>")
		out.WriteString(renderInline(strings.TrimSpace(trimmed[level:])))
		out.WriteString("</b>")
		return
	}
	if len(trimmed) >= 2 && strings.ContainsRune("-*+", rune(trimmed[0])) && trimmed[1] == ' ' {
		out.WriteString(indent + "• ")
		out.WriteString(renderInline(trimmed[2:]))
		return
	}
	out.WriteString(renderInline(line))
}

// headingLevel is the number of #s opening an ATX heading, or 0.
func headingLevel(s string) int {
	n := 0
	for n < len(s) && n < 6 && s[n] == '#' {
		n++
	}
	if n == 0 || n >= len(s) || s[n] != ' ' || strings.TrimSpace(s[n:]) == "" {
		return 0
	}
	return n
}

// emphasis are the inline delimiters, longest first so "**" wins over "*".
var emphasis = []struct{ delim, tag string }{
	{"**", "b"}, {"__", "b"}, {"~~", "s"}, {"*", "i"}, {"_", "i"},
}

// renderInline renders one line's inline Markdown. Each span is written
// whole, opening and closing tag together, so tags always balance.
func renderInline(s string) string {
	var out strings.Builder
	for i := 0; i < len(s); {
		if n, ok := renderSpan(&out, s, i); ok {
			i = n
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		out.WriteString(escape(string(r)))
		i += size
	}
	return out.String()
}

// renderSpan writes the code span, link or emphasis starting at s[i] and
// returns the index after it, or false when none starts there.
func renderSpan(out *strings.Builder, s string, i int) (int, bool) {
	switch s[i] {
	case '`':
		return renderCode(out, s, i)
	case '[':
		return renderLink(out, s, i)
	}
	for _, e := range emphasis {
		if !strings.HasPrefix(s[i:], e.delim) || !opens(s, i, e.delim) {
			continue
		}
		end := closing(s, i+len(e.delim), e.delim)
		if end < 0 {
			continue
		}
		out.WriteString("<" + e.tag + ">")
		out.WriteString(renderInline(s[i+len(e.delim) : end]))
		out.WriteString("</" + e.tag + ">")
		return end + len(e.delim), true
	}
	return i, false
}

func renderCode(out *strings.Builder, s string, i int) (int, bool) {
	run := 0
	for i+run < len(s) && s[i+run] == '`' {
		run++
	}
	fence := strings.Repeat("`", run)
	for j := i + run; j < len(s); {
		k := strings.Index(s[j:], fence)
		if k < 0 {
			break
		}
		k += j
		after := k + run
		if after < len(s) && s[after] == '`' { // a longer run does not close
			for after < len(s) && s[after] == '`' {
				after++
			}
			j = after
			continue
		}
		if k == i+run {
			break // `` is no span
		}
		out.WriteString("<code>" + escape(s[i+run:k]) + "</code>")
		return after, true
	}
	out.WriteString(escape(fence))
	return i + run, true
}

// linkSchemes are the URL schemes rendered as links; others stay text.
var linkSchemes = []string{"http://", "https://", "tg://", "mailto:"}

func renderLink(out *strings.Builder, s string, i int) (int, bool) {
	textEnd := strings.Index(s[i:], "](")
	if textEnd < 0 {
		return i, false
	}
	textEnd += i
	text := s[i+1 : textEnd]
	if text == "" || strings.ContainsAny(text, "[]") {
		return i, false
	}
	depth, urlEnd := 1, -1
	for j := textEnd + 2; j < len(s) && urlEnd < 0; j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				urlEnd = j
			}
		}
	}
	if urlEnd < 0 {
		return i, false
	}
	url := strings.TrimSpace(s[textEnd+2 : urlEnd])
	if !hasLinkScheme(url) || strings.ContainsAny(url, " \t") {
		return i, false
	}
	out.WriteString(`<a href="` + escapeAttr(url) + `">` + renderInline(text) + "</a>")
	return urlEnd + 1, true
}

func hasLinkScheme(url string) bool {
	lower := strings.ToLower(url)
	for _, scheme := range linkSchemes {
		if strings.HasPrefix(lower, scheme) && len(url) > len(scheme) {
			return true
		}
	}
	return false
}

// opens is true when delim at s[i] can open a span: followed by a
// non-space, and for "_" not inside a word (snake_case stays as it is).
func opens(s string, i int, delim string) bool {
	next, _ := utf8.DecodeRuneInString(s[i+len(delim):])
	if i+len(delim) >= len(s) || unicode.IsSpace(next) {
		return false
	}
	if delim[0] == '_' && i > 0 {
		prev, _ := utf8.DecodeLastRuneInString(s[:i])
		return !isWordRune(prev)
	}
	return true
}

// closing is the index of the delimiter that closes a span whose text
// starts at s[from], or -1: preceded by a non-space, not the start of a
// longer run, and for "_" not followed by a word character.
func closing(s string, from int, delim string) int {
	for j := from + 1; j+len(delim) <= len(s); j++ {
		if !strings.HasPrefix(s[j:], delim) {
			continue
		}
		prev, _ := utf8.DecodeLastRuneInString(s[:j])
		after := j + len(delim)
		if unicode.IsSpace(prev) || (len(delim) == 1 && after < len(s) && s[after] == delim[0]) {
			continue
		}
		if delim[0] == '_' && after < len(s) {
			if next, _ := utf8.DecodeRuneInString(s[after:]); isWordRune(next) {
				continue
			}
		}
		return j
	}
	return -1
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return htmlEscaper.Replace(s) }

func escapeAttr(s string) string { return strings.ReplaceAll(escape(s), `"`, "&quot;") }
