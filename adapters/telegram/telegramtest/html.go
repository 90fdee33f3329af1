package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
)

// htmlTags are the tags Telegram's HTML parse mode accepts.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "a": true, "code": true, "pre": true,
	"blockquote": true, "tg-spoiler": true, "span": true, "tg-emoji": true,
}

var htmlEntities = map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`}

// ParseHTML checks text as Telegram parses parse_mode=HTML and returns
// the visible text. It is stricter than Telegram only where Telegram's
// documentation asks for escaping: a bare "<", ">" or "&" is an error.
// The error reads like Telegram's ("can't parse entities: ...").
func ParseHTML(text string) (string, error) {
	var visible strings.Builder
	var open []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			end := strings.IndexByte(text[i:], '>')
			if end < 0 {
				return "", parseErr("unclosed start tag at byte offset %d", i)
			}
			if err := tag(text[i+1:i+end], i, &open); err != nil {
				return "", err
			}
			i += end + 1
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 || end > 10 {
				return "", parseErr("unescaped \"&\" at byte offset %d", i)
			}
			decoded, ok := entity(text[i+1 : i+end])
			if !ok {
				return "", parseErr("unsupported HTML entity %q at byte offset %d", text[i:i+end+1], i)
			}
			visible.WriteString(decoded)
			i += end + 1
		case '>':
			return "", parseErr("unescaped \">\" at byte offset %d", i)
		default:
			visible.WriteByte(text[i])
			i++
		}
	}
	if len(open) > 0 {
		return "", parseErr("can't find end tag corresponding to start tag %q", open[len(open)-1])
	}
	return visible.String(), nil
}

func parseErr(format string, args ...any) error {
	return fmt.Errorf("can't parse entities: "+format, args...)
}

func entity(name string) (string, bool) {
	if s, ok := htmlEntities[name]; ok {
		return s, true
	}
	if !strings.HasPrefix(name, "#") {
		return "", false
	}
	base, digits := 10, name[1:]
	if strings.HasPrefix(digits, "x") || strings.HasPrefix(digits, "X") {
		base, digits = 16, digits[1:]
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil || n == 0 || n > 0x10FFFF {
		return "", false
	}
	return string(rune(n)), true
}

// tag applies one start or end tag to the stack of open tags, with
// Telegram's nesting rules: end tags close the innermost tag, nothing
// nests inside code, pre holds only code, and links and quotes do not
// nest in themselves.
func tag(body string, offset int, open *[]string) error {
	if strings.HasPrefix(body, "/") {
		name := strings.ToLower(strings.TrimSpace(body[1:]))
		if n := len(*open); n == 0 || (*open)[n-1] != name {
			return parseErr("unexpected end tag at byte offset %d", offset)
		}
		*open = (*open)[:len(*open)-1]
		return nil
	}
	name, attrs, _ := strings.Cut(body, " ")
	name = strings.ToLower(name)
	if !htmlTags[name] {
		return parseErr("unsupported start tag %q at byte offset %d", name, offset)
	}
	if err := checkAttrs(name, strings.TrimSpace(attrs), offset); err != nil {
		return err
	}
	if n := len(*open); n > 0 {
		parent := (*open)[n-1]
		switch {
		case parent == "code", parent == "pre" && name != "code":
			return parseErr("tag %q can't be inside %q at byte offset %d", name, parent, offset)
		case (name == "a" || name == "blockquote" || name == "pre") && contains(*open, name):
			return parseErr("tag %q can't be nested at byte offset %d", name, offset)
		}
	}
	*open = append(*open, name)
	return nil
}

func checkAttrs(name, attrs string, offset int) error {
	switch name {
	case "a":
		if !strings.HasPrefix(attrs, `href="`) || !strings.HasSuffix(attrs, `"`) || len(attrs) <= len(`href=""`) {
			return parseErr("a tag without href at byte offset %d", offset)
		}
	case "span":
		if attrs != `class="tg-spoiler"` {
			return parseErr("span without class=\"tg-spoiler\" at byte offset %d", offset)
		}
	case "code":
		if attrs != "" && (!strings.HasPrefix(attrs, `class="language-`) || !strings.HasSuffix(attrs, `"`)) {
			return parseErr("unsupported code attribute at byte offset %d", offset)
		}
	case "blockquote":
		if attrs != "" && attrs != "expandable" {
			return parseErr("unsupported blockquote attribute at byte offset %d", offset)
		}
	case "tg-emoji":
		if !strings.HasPrefix(attrs, "emoji-id=") {
			return parseErr("tg-emoji without emoji-id at byte offset %d", offset)
		}
	default:
		if attrs != "" {
			return parseErr("unexpected attribute on %q at byte offset %d", name, offset)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
