package discord

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/replyflow/replyflow/pipeline/mdscan"
)

// MessageLimit is the length of one message's content: Discord allows
// 2,000 characters. It is measured here in UTF-16 code units, as
// pipeline.Chunk measures it, which is never fewer than the code points
// Discord counts, so a chunk that fits here fits there.
const MessageLimit = 2000

// Render turns the Markdown an agent writes into what Discord shows as
// meant. Discord renders Markdown itself (bold, italics, strikes, code,
// fences, quotes, lists, masked links, headings # to ###), so almost
// everything stays as written. Headings #### to ###### are not Discord
// Markdown (they would show their hashes): they become bold lines. Lines
// inside ``` blocks are left alone.
//
// Discord shows a masked link [text](url) as its text alone: one whose
// text reads as another address ([https://bank.example](https://evil.example))
// becomes "text (url)", so the reader sees where it goes. Links of other
// schemes (tg:, javascript:) are not Discord's links and stay text.
//
// Render never lengthens text: a heading loses at least five characters
// ("#### ") and gains four ("**" twice), and an unmasked link loses "[",
// "](" and ")" and gains " (" and ")". So a chunk the workflow cut to
// MessageLimit with pipeline.Chunk (whose reopened fences count) still
// fits once rendered.
func Render(markdown string) string {
	lines := strings.Split(markdown, "\n")
	inCode := false
	for i, line := range lines {
		if mdscan.IsFence(line) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) > 3 {
			continue // an indented code line in CommonMark, not a heading
		}
		line = unmaskMisleading(line)
		lines[i] = line
		trimmed = strings.TrimLeft(line, " ")
		if level := mdscan.HeadingLevel(trimmed); level >= 4 {
			lines[i] = boldLine(trimmed[level:])
		}
	}
	return strings.Join(lines, "\n")
}

// maskedSchemes are the URL schemes Discord shows masked links for.
var maskedSchemes = []string{"http://", "https://"}

// unmaskMisleading rewrites the masked links of one line whose text reads
// as another address as "text (url)"; code spans and escaped brackets
// stay as written.
func unmaskMisleading(line string) string {
	if !strings.Contains(line, "](") {
		return line
	}
	var out strings.Builder
	for i := 0; i < len(line); {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			out.WriteString(line[i : i+2])
			i += 2
			continue
		case line[i] == '`':
			_, end, _ := mdscan.CodeSpan(line, i)
			out.WriteString(line[i:end])
			i = end
			continue
		case line[i] == '[':
			if text, url, end, ok := mdscan.Link(line, i, maskedSchemes); ok && mdscan.MisleadingLabel(text, url) {
				out.WriteString(text + " (" + url + ")")
				i = end
				continue
			}
		}
		out.WriteByte(line[i])
		i++
	}
	return out.String()
}

// boldLine is a heading's text as a bold line: without its closing
// hashes, and without bold of its own, which would end the line's early.
func boldLine(text string) string {
	text = strings.TrimSpace(text)
	if closing := strings.TrimRight(text, "#"); closing != text && (closing == "" || strings.HasSuffix(closing, " ")) {
		text = strings.TrimSpace(closing)
	}
	text = strings.ReplaceAll(text, "**", "")
	if text == "" {
		return ""
	}
	return "**" + text + "**"
}

// unitLen is the length of s in UTF-16 code units.
func unitLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// fit cuts content to MessageLimit, ending it with "…", and says whether
// it had to. The workflow's chunks always fit; this keeps a longer text
// (a direct reply not cut by the workflow) from being refused outright.
func fit(content string) (string, bool) {
	if unitLen(content) <= MessageLimit {
		return content, false
	}
	n, end := 0, 0
	for i, r := range content {
		if n+utf16.RuneLen(r) > MessageLimit-1 { // room for "…", one unit
			break
		}
		n += utf16.RuneLen(r)
		end = i + utf8.RuneLen(r)
	}
	return content[:end] + "…", true
}
