package pipeline

import "strings"

// MaxReplyPrefixBytes bounds a rendered reply prefix, which goes in front
// of every reply.
const MaxReplyPrefixBytes = 128

// RenderReplyPrefix fills the template of REPLYFLOW_REPLY_PREFIX ("[{model}] "):
// each {name} that is a key of vars becomes its value, put on one line (a
// value is not read for placeholders again); everything else, unknown
// placeholders and lone braces included, stays as written. The result is
// at most MaxReplyPrefixBytes, cut at a character with "…".
func RenderReplyPrefix(template string, vars map[string]string) string {
	var b strings.Builder
	rest := template
	for rest != "" && b.Len() <= MaxReplyPrefixBytes {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:open])
		rest = rest[open:]
		end := strings.IndexByte(rest, '}')
		value, known := "", false
		if end > 0 {
			value, known = vars[rest[1:end]]
		}
		if !known { // "{" is text; what follows it may still hold a placeholder
			b.WriteByte('{')
			rest = rest[1:]
			continue
		}
		b.WriteString(oneLine(value))
		rest = rest[end+1:]
	}
	return CutBytes(b.String(), MaxReplyPrefixBytes)
}
