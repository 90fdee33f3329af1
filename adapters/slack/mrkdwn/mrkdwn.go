// Package mrkdwn renders the Markdown an agent writes as Slack mrkdwn and
// cuts replies into chunks that fit Slack's message limit once rendered.
// It is pure (no Slack SDK, no I/O; it imports the standard library and
// pipeline only, which TestImportsOnlyWhatAWorkflowMay keeps so): the
// delivery of a Slack reply's first chunk cuts the reply with Chunk (the
// session records the chunks it answers), and the Slack adapter renders
// each chunk with Render when it posts it. Chunk measures chunks with
// measure, a rendering never shorter than Render's, so Render may change
// in ways that never lengthen text and every chunk still fits.
package mrkdwn

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/pipeline/mdscan"
)

// Channel is the session channel of Slack, whose replies are mrkdwn
// (adapters/slack's Channel is this one).
const Channel = "slack"

// MessageLimit is the length of rendered text one chat.postMessage
// carries. Slack recommends 4,000 characters (it truncates at 40,000) and
// does not say which characters; we count UTF-16 code units as the
// pipeline does, which is never fewer than runes, and count the escapes
// (&amp;) whole, so the measure errs on the short side.
const MessageLimit = 4000

// Render turns the Markdown an agent writes into Slack mrkdwn:
// **bold** and __bold__ become *bold*, *italic* and _italic_ _italic_,
// ~~strike~~ ~strike~, [text](url) <url|text> (http, https and mailto
// only; see renderLink for tg: links and text that reads as another
// address), headings bold lines, and fenced blocks ``` blocks without their
// info string. `code`, lists, quotes and bare URLs stay as written (Slack
// links bare URLs itself). & < > are escaped everywhere, code included, as
// Slack requires, except in the <url|text> links this renders and in user
// and channel mentions (<@U123>, <#C123>) the agent copied; <!here> and
// the like are escaped, so a reply cannot ping a whole channel.
//
// Rendering may lengthen text (an escaped & is five characters), so a
// chunk cut in Markdown may not fit once rendered: Chunk accounts for it.
func Render(markdown string) string { return renderer{}.render(markdown) }

// measure renders as Render did before it dropped tg: links and showed
// the target of links whose text reads as another address: Chunk measures
// with it, so a recorded session is cut into the same chunks on replay.
// Render is never longer (FuzzRender checks it), so the chunks still fit.
func measure(markdown string) string { return renderer{recorded: true}.render(markdown) }

// renderer renders Markdown as mrkdwn; recorded keeps the links of
// recorded sessions, for measure.
type renderer struct{ recorded bool }

func (r renderer) render(markdown string) string {
	lines := strings.Split(strings.ToValidUTF8(markdown, "\uFFFD"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		if i > 0 {
			out.WriteByte('\n')
		}
		if mdscan.IsFence(lines[i]) {
			i = renderFence(&out, lines, i)
			continue
		}
		r.renderLine(&out, lines[i])
		i++
	}
	return out.String()
}

// Length is the length of rendered text as MessageLimit counts it.
func Length(mrkdwn string) int {
	n := 0
	for _, r := range mrkdwn {
		n += utf16.RuneLen(r)
	}
	return n
}

// Chunk splits a reply into Markdown chunks of which each renders to at
// most limit characters (Length of Render). It cuts with
// pipeline.Chunk, renders each chunk, and cuts a chunk that grew past the
// limit again at a limit smaller by the growth, until every chunk fits;
// only a chunk of a single character can stay over a limit below the
// width of its escape.
func Chunk(markdown string, limit int) []string {
	var out []string
	for _, c := range pipeline.Chunk(markdown, limit) {
		out = append(out, fit(c, limit, limit)...)
	}
	return out
}

// fit returns chunk whole if it renders within limit, else cut at a
// smaller Markdown limit than cut, the one it was cut at. cut shrinks on
// every call, so the recursion ends.
func fit(chunk string, limit, cut int) []string {
	n := Length(measure(chunk))
	if n <= limit || cut <= 1 {
		return []string{chunk}
	}
	smaller := min(cut-1, cut*limit/n)
	smaller = max(smaller, 1)
	var out []string
	for _, c := range pipeline.Chunk(chunk, smaller) {
		out = append(out, fit(c, limit, smaller)...)
	}
	return out
}

// renderFence writes the code block opening at lines[start] without its
// info string, escaped, and returns the index of the line after it. A
// block never closed runs to the end and is closed.
func renderFence(out *strings.Builder, lines []string, start int) int {
	out.WriteString("```\n")
	end := start + 1
	for ; end < len(lines) && !mdscan.IsFence(lines[end]); end++ {
		out.WriteString(escape(lines[end]))
		out.WriteByte('\n')
	}
	out.WriteString("```")
	if end < len(lines) {
		end++ // the closing fence
	}
	return end
}

func (r renderer) renderLine(out *strings.Builder, line string) {
	trimmed := strings.TrimLeft(line, " ")
	if level := mdscan.HeadingLevel(trimmed); level > 0 {
		// A bold line; bold inside it would close it early, so it is
		// dropped there.
		out.WriteString("*" + r.renderInline(strings.TrimSpace(trimmed[level:]), true) + "*")
		return
	}
	indent := line[:len(line)-len(trimmed)]
	if len(trimmed) >= 2 && strings.ContainsRune("-*+", rune(trimmed[0])) && trimmed[1] == ' ' {
		out.WriteString(indent + trimmed[:2] + r.renderInline(trimmed[2:], false))
		return
	}
	out.WriteString(r.renderInline(line, false))
}

// emphasis are the inline delimiters, longest first so "**" wins over "*".
var emphasis = []struct {
	delim, mark string
	bold        bool
}{
	{"**", "*", true}, {"__", "*", true}, {"~~", "~", false}, {"*", "_", false}, {"_", "_", false},
}

// renderInline renders one line's inline Markdown; inBold drops bold
// marks, which Slack cannot nest.
func (r renderer) renderInline(s string, inBold bool) string {
	var out strings.Builder
	for i := 0; i < len(s); {
		if n, ok := r.renderSpan(&out, s, i, inBold); ok {
			i = n
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		out.WriteString(escape(string(c)))
		i += size
	}
	return out.String()
}

// renderSpan writes the code span, link, mention or emphasis starting at
// s[i] and returns the index after it, or false when none starts there.
func (r renderer) renderSpan(out *strings.Builder, s string, i int, inBold bool) (int, bool) {
	switch s[i] {
	case '`':
		return renderCode(out, s, i)
	case '[':
		return r.renderLink(out, s, i, inBold)
	case '<':
		return keepMention(out, s, i)
	}
	for _, e := range emphasis {
		if !strings.HasPrefix(s[i:], e.delim) || !mdscan.Opens(s, i, e.delim) {
			continue
		}
		end := mdscan.Closing(s, i+len(e.delim), e.delim)
		if end < 0 {
			continue
		}
		inner := r.renderInline(s[i+len(e.delim):end], inBold || e.bold)
		if e.bold && inBold {
			out.WriteString(inner)
		} else {
			out.WriteString(e.mark + inner + e.mark)
		}
		return end + len(e.delim), true
	}
	return i, false
}

// renderCode writes a code span, escaped. Slack's spans are single
// backticks without escapes, so a span holding a backtick stays text.
func renderCode(out *strings.Builder, s string, i int) (int, bool) {
	code, end, ok := mdscan.CodeSpan(s, i)
	if !ok || strings.TrimSpace(code) == "" || strings.Contains(code, "`") {
		out.WriteString(escape(s[i:end]))
		return end, true
	}
	out.WriteString("`" + escape(code) + "`")
	return end, true
}

// linkSchemes are the URL schemes rendered as links; others stay text.
var linkSchemes = []string{"http://", "https://", "mailto:"}

// telegramSchemes are Telegram's own links (a tg://user link notifies that
// user, tg://proxy sets up a proxy): as on Telegram, only their text is
// shown.
var telegramSchemes = []string{"tg:"}

// renderLink writes a link as <url|text>, a Telegram link as its text,
// and a link whose text reads as another address as <url>, which Slack
// shows as the URL itself, so the reader sees where it goes. Both forms
// are shorter than <url|text>.
func (r renderer) renderLink(out *strings.Builder, s string, i int, inBold bool) (int, bool) {
	if text, _, end, ok := mdscan.Link(s, i, telegramSchemes); ok && !r.recorded && strings.TrimSpace(text) != "" {
		out.WriteString(r.renderInline(text, inBold)) // not inside a link: a mention may stay
		return end, true
	}
	text, url, end, ok := mdscan.Link(s, i, linkSchemes)
	// | and > would end Slack's link early, and < start another.
	if !ok || strings.TrimSpace(text) == "" || strings.ContainsAny(url, "<>|") {
		return i, false
	}
	if !r.recorded && mdscan.MisleadingLabel(text, url) {
		out.WriteString("<" + escape(url) + ">")
		return end, true
	}
	out.WriteString("<" + escape(url) + "|" + r.label(text, inBold) + ">")
	return end, true
}

// label is a link's text, formatted; a mention inside it would nest < in
// Slack's link, so text holding < is only escaped.
func (r renderer) label(text string, inBold bool) string {
	if strings.Contains(text, "<") {
		return escape(text)
	}
	return r.renderInline(text, inBold)
}

// keepMention copies a user or channel mention (<@U123>, <#C123|name>)
// as it is; anything else starting with < is escaped by the caller.
func keepMention(out *strings.Builder, s string, i int) (int, bool) {
	end := strings.IndexByte(s[i:], '>')
	if end < 0 || i+1 >= len(s) || (s[i+1] != '@' && s[i+1] != '#') {
		return i, false
	}
	inner := s[i+2 : i+end]
	id, label, _ := strings.Cut(inner, "|")
	if s[i+1] == '@' && label != "" || !isSlackID(id) || strings.ContainsAny(label, "<&") {
		return i, false
	}
	out.WriteString(s[i : i+end+1])
	return i + end + 1, true
}

// isSlackID is true for IDs as Slack writes them: U0123ABC, C0123ABC.
func isSlackID(id string) bool {
	if id == "" || len(id) > pipeline.MaxIDBytes {
		return false
	}
	for _, r := range id {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return mrkdwnEscaper.Replace(s) }
