// Package mdscan finds the Markdown constructs agents write (fences,
// headings, emphasis delimiters, code spans, links) for the renderers of
// replies into a platform's markup (the adapters).
// It only finds; what a construct becomes, and how text is escaped, is
// each renderer's.
package mdscan

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsFence is true for a code fence line: ``` after at most three spaces.
func IsFence(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	return len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```")
}

// HeadingLevel is the number of #s opening an ATX heading, or 0.
func HeadingLevel(s string) int {
	n := 0
	for n < len(s) && n < 6 && s[n] == '#' {
		n++
	}
	if n == 0 || n >= len(s) || s[n] != ' ' || strings.TrimSpace(s[n:]) == "" {
		return 0
	}
	return n
}

// Opens is true when delim at s[i] can open a span: followed by a
// non-space, and for "_" not inside a word (snake_case stays as it is).
func Opens(s string, i int, delim string) bool {
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

// Closing is the index of the delimiter that closes a span whose text
// starts at s[from], or -1: preceded by a non-space, not the start of a
// longer run, and for "_" not followed by a word character.
func Closing(s string, from int, delim string) int {
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

// CodeSpan reads the code span whose backtick run starts at s[i]: its
// code and the index after its closing run. When none closes there, ok
// is false and the run (s[i:end]) is plain text.
func CodeSpan(s string, i int) (code string, end int, ok bool) {
	run := 0
	for i+run < len(s) && s[i+run] == '`' {
		run++
	}
	fence := s[i : i+run]
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
		return s[i+run : k], after, true
	}
	return "", i + run, false
}

// Link reads the [text](url) starting at s[i], with balanced parentheses
// in the URL, when its text is not empty and holds no brackets, and its
// URL has one of schemes and no white space; end is the index after it.
func Link(s string, i int, schemes []string) (text, url string, end int, ok bool) {
	textEnd := strings.Index(s[i:], "](")
	if textEnd < 0 {
		return "", "", i, false
	}
	textEnd += i
	text = s[i+1 : textEnd]
	if text == "" || strings.ContainsAny(text, "[]") {
		return "", "", i, false
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
		return "", "", i, false
	}
	url = strings.TrimSpace(s[textEnd+2 : urlEnd])
	if !HasScheme(url, schemes) || strings.ContainsAny(url, " \t") {
		return "", "", i, false
	}
	return text, url, urlEnd + 1, true
}

// HasScheme is true when url starts with one of schemes and has more.
func HasScheme(url string, schemes []string) bool {
	lower := strings.ToLower(url)
	for _, scheme := range schemes {
		if strings.HasPrefix(lower, scheme) && len(url) > len(scheme) {
			return true
		}
	}
	return false
}

// MisleadingLabel is true when a link's text reads as an address other
// than the link's URL: [https://bank.example](https://evil.example) shows
// one site and opens another. Text reads as an address when, without its
// emphasis marks, it is a URL, a host name or an e-mail address, or holds
// a word with "://" or starting with "www."; it is another address when
// the two differ other than in letter case, scheme and a final "/".
func MisleadingLabel(text, url string) bool {
	label := strings.Trim(text, " \t*_~`")
	if !looksLikeAddress(label) {
		for _, word := range strings.Fields(label) {
			word = strings.Trim(word, "*_~`()<>,;:.!?\"'")
			if strings.Contains(word, "://") || strings.HasPrefix(strings.ToLower(word), "www.") {
				if sameAddress(word, url) {
					continue
				}
				return true
			}
		}
		return false
	}
	return !sameAddress(label, url)
}

func looksLikeAddress(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t") {
		return false
	}
	if strings.Contains(s, "://") || strings.HasPrefix(strings.ToLower(s), "mailto:") {
		return true
	}
	host := s[strings.LastIndexByte(s, '@')+1:] // an e-mail address reads as its domain
	if end := strings.IndexAny(host, "/?#:"); end >= 0 {
		host = host[:end]
	}
	labels := strings.Split(host, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || strings.IndexFunc(l, func(r rune) bool { return !isWordRune(r) && r != '-' }) >= 0 {
			return false
		}
	}
	tld := labels[len(labels)-1]
	return utf8.RuneCountInString(tld) >= 2 && strings.IndexFunc(tld, func(r rune) bool { return !unicode.IsLetter(r) }) < 0
}

// sameAddress compares two addresses without letter case, scheme and a
// final "/".
func sameAddress(a, b string) bool {
	return bareAddress(a) == bareAddress(b)
}

func bareAddress(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	s = strings.TrimPrefix(s, "mailto:")
	return strings.TrimSuffix(s, "/")
}
