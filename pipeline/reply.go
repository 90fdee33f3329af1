package pipeline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens a model uses to say something about the reply itself.
const (
	// SilentToken asks for no reply at all ("lurk" in a group).
	SilentToken = "NO_REPLY"
	// HeartbeatToken acknowledges a heartbeat prompt; never shown.
	HeartbeatToken = "HEARTBEAT_OK"
)

// NormalizeReply applies the token rules to a model's reply and reports
// whether anything is left to deliver:
//   - a reply that is only NO_REPLY (any case, surrounding space) is silent;
//   - a NO_REPLY glued to the start is stripped ("NO_REPLYhello" → "hello"),
//     as is one at the end after white space ("😄 NO_REPLY" → "😄");
//     otherwise ("NO_REPLY: x") the reply is delivered unchanged;
//   - HEARTBEAT_OK is stripped at the start, or at the end followed by at
//     most four non-word characters, never in the middle.
func NormalizeReply(reply string) (string, bool) {
	text := strings.TrimSpace(reply)
	if strings.EqualFold(text, SilentToken) {
		return "", false
	}
	if rest, ok := cutPrefixFold(text, SilentToken); ok {
		if r, _ := utf8.DecodeRuneInString(rest); isWordRune(r) {
			text = rest
		}
	}
	if head, ok := cutSuffixFold(text, SilentToken); ok && head != "" {
		if r, _ := utf8.DecodeLastRuneInString(head); unicode.IsSpace(r) {
			text = strings.TrimSpace(head)
		}
	}
	text = stripHeartbeat(text)
	return text, text != ""
}

func stripHeartbeat(text string) string {
	if rest, ok := cutPrefixFold(text, HeartbeatToken); ok {
		text = strings.TrimSpace(rest)
	}
	// At the end, allowing up to four trailing non-word runes ("OK!!").
	tail := text
	for n := 0; n <= 4; n++ {
		if head, ok := cutSuffixFold(tail, HeartbeatToken); ok {
			if r, _ := utf8.DecodeLastRuneInString(head); head == "" || !isWordRune(r) {
				return strings.TrimSpace(head)
			}
			return text
		}
		r, size := utf8.DecodeLastRuneInString(tail)
		if size == 0 || isWordRune(r) {
			return text
		}
		tail = tail[:len(tail)-size]
	}
	return text
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}
