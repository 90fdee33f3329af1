package telegram

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/replyflow/replyflow/pipeline/mdscan"
)

// RenderHTML turns the Markdown an agent writes into Telegram's HTML
// subset: code fences become <pre><code>, `code` <code>, **bold** and
// __bold__ <b>, *italic* and _italic_ <i>, ~~strike~~ <s>, [text](url) a
// link (http, https and mailto only; see renderLink for tg: links and
// text that reads as another address), headings bold lines, "> " lines a
// <blockquote>, and list markers bullets. Everything else is escaped.
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
		case mdscan.IsFence(lines[i]):
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

// MessageLimit is the length of one message's visible text: Telegram
// allows 4,096 UTF-16 code units (VisibleLength).
const MessageLimit = 4096

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
	for ; end < len(lines) && !mdscan.IsFence(lines[end]); end++ {
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
	if level := mdscan.HeadingLevel(trimmed); level > 0 {
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
		if !strings.HasPrefix(s[i:], e.delim) || !mdscan.Opens(s, i, e.delim) {
			continue
		}
		end := mdscan.Closing(s, i+len(e.delim), e.delim)
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
	code, end, ok := mdscan.CodeSpan(s, i)
	if !ok {
		out.WriteString(escape(s[i:end]))
		return end, true
	}
	out.WriteString("<code>" + escape(code) + "</code>")
	return end, true
}

// linkSchemes are the URL schemes rendered as links; others stay text.
// tg: is not one: a tg://user link is a mention that notifies that user
// in a group, and tg://proxy sets up a proxy in one tap, neither a thing
// a model's reply may do.
var linkSchemes = []string{"http://", "https://", "mailto:"}

// telegramSchemes are Telegram's own links, rendered as their text alone.
var telegramSchemes = []string{"tg:"}

// renderLink writes a link as <a>, a Telegram link as its text, and a link
// whose text reads as another address as its text followed by the real
// URL in parentheses ("label (target)"), so the reader sees where it goes.
// Each form is shorter in visible text than the Markdown: "[", "](" and
// ")" are four characters, " (" and ")" three.
func renderLink(out *strings.Builder, s string, i int) (int, bool) {
	if text, _, end, ok := mdscan.Link(s, i, telegramSchemes); ok {
		out.WriteString(renderInline(text))
		return end, true
	}
	text, url, end, ok := mdscan.Link(s, i, linkSchemes)
	if !ok {
		return i, false
	}
	link := `<a href="` + escapeAttr(url) + `">`
	if mdscan.MisleadingLabel(text, url) {
		out.WriteString(renderInline(text) + " (" + link + escape(url) + "</a>)")
		return end, true
	}
	out.WriteString(link + renderInline(text) + "</a>")
	return end, true
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return htmlEscaper.Replace(s) }

func escapeAttr(s string) string { return strings.ReplaceAll(escape(s), `"`, "&quot;") }
