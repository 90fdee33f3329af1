package pipeline

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The chat-control commands, beside the fixed ones of command.go.
const (
	// CommandHelp is /help or /commands: what the bot understands here.
	CommandHelp CommandName = "help"
	// CommandWhoami is /whoami: the sender's provider:id, and whether an
	// owner.
	CommandWhoami CommandName = "whoami"
	// CommandUsage is /usage: alone it shows the session's totals; with a
	// mode (Directives.Usage) it sets the footer under each reply.
	CommandUsage CommandName = "usage"
	// CommandContext is /context: what the next prompt holds.
	CommandContext CommandName = "context"
	// CommandCompact is /compact [focus]: the transcript is summarized and
	// a new one starts from the summary (Parsed.Focus).
	CommandCompact CommandName = "compact"
	// CommandThink is /think: alone it shows the level; with one
	// (Directives.Think) it sets it.
	CommandThink CommandName = "think"
	// CommandVerbose is /verbose: alone it shows the setting; with on or
	// off (Directives.Verbose) it sets it.
	CommandVerbose CommandName = "verbose"
	// CommandSend is /send: alone it shows the setting; on or off
	// (Parsed.Send) unmutes or mutes every reply in the chat. For owners:
	// the session decides who may.
	CommandSend CommandName = "send"
	// CommandExport is /export: the transcript as a Markdown document.
	CommandExport CommandName = "export"
	// CommandHeartbeat is /heartbeat [every 30m [08:00-22:00] [zone] | off
	// | now]: owners turn the chat's heartbeat on, off, or run it now;
	// alone it shows it (Parsed.Heartbeat, Parsed.HeartbeatAction).
	CommandHeartbeat CommandName = "heartbeat"
	// CommandDirectives is a message of several directives and nothing
	// else (Parsed.DirectivesOnly), or one with too many.
	CommandDirectives CommandName = "directives"
)

// Bounds of what ParseMessage reads and answers.
const (
	// MaxCompactFocusRunes bounds /compact's focus; a longer one is an
	// error, not cut, so the summary never follows half an instruction.
	MaxCompactFocusRunes = 500
	// MaxResetWords is how many ParseOptions.ResetWords are read.
	MaxResetWords = 16
	// MaxResetWordBytes bounds one reset word; a longer one never matches.
	MaxResetWordBytes = 64
	// maxErrorBytes bounds Parsed.Error, which may quote what was typed.
	maxErrorBytes = 300
)

// ParseOptions are what ParseMessage reads besides the text. They change
// what a message means, so the workflow must take them from its history
// (its start input or a recorded activity result), never from the
// worker's environment: a replay on a worker configured otherwise would
// parse the same message differently.
type ParseOptions struct {
	// ResetWords are whole messages that start a new transcript as /new
	// does ("new chat", "start over"), matched as stop words are: in any
	// case, with white space folded and trailing punctuation ignored. The
	// first MaxResetWords are read; Validate says what is wrong with them.
	ResetWords []string
}

// Validate reports the first reset word that cannot work, for the
// configuration to refuse it at start.
func (o ParseOptions) Validate() error {
	if len(o.ResetWords) > MaxResetWords {
		return fmt.Errorf("%d reset words are configured; at most %d are read, so remove some", len(o.ResetWords), MaxResetWords)
	}
	for _, w := range o.ResetWords {
		word := foldResetWord(w)
		switch {
		case word == "":
			return fmt.Errorf("reset word %q is empty once trailing punctuation is dropped; remove it", w)
		case len(w) > MaxResetWordBytes:
			return fmt.Errorf("reset word %q is longer than %d bytes; use a shorter one", CutBytes(w, 40), MaxResetWordBytes)
		}
		if p := ParseMessage(w, ParseOptions{}); p.Command != "" || p.Directives.Any() {
			return fmt.Errorf("reset word %q already means something else here (/%s); pick another", w, p.Command)
		}
	}
	return nil
}

// isResetWord is true when the whole message is one of the reset words.
func (o ParseOptions) isResetWord(trimmed string) bool {
	if len(trimmed) > 4*MaxResetWordBytes { // white space may fold away, not that much
		return false
	}
	msg := foldResetWord(trimmed)
	for i, w := range o.ResetWords {
		if i == MaxResetWords {
			break
		}
		if word := foldResetWord(w); word != "" && len(w) <= MaxResetWordBytes && strings.EqualFold(msg, word) {
			return true
		}
	}
	return false
}

func foldResetWord(s string) string {
	s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	return strings.Join(strings.Fields(s), " ")
}

// ParseMessage reads the commands and inline directives of a message. A
// leading "/" that names no known command is left as text, so "/shrug"
// reaches the model untouched. The session workflow parses every message
// with it, so what it answers is part of what open runs replay:
// TestParseMessageIsPinned guards it.
//
// First come the fixed commands (parseFixedCommand): claim codes, stop
// words, /status, /stop, /new, /reset, /activation, /approve and /reject.
// Then opts' reset words, then the commands that are a whole message:
// /help (/commands), /whoami, /context, /export, /compact [focus], /send
// [on|off], and /think, /verbose, /usage, /model, /queue alone (show) or
// /model default, /queue default (reset).
//
// Everywhere else /think, /verbose, /model, /queue and /usage are
// directives, anywhere in the text and also as "/think: high": see
// findDirectives for what is one (not "/thinking", not a URL's or a path's
// "/think", not in code). They are taken out of Text, which is tidied, and
// returned in Directives for this message's turn; a message of directives
// only sets them for the session (DirectivesOnly). A directive whose words
// do not fit is an Error, and so are more than maxDirectives directives,
// or one given twice with different settings.
//
// Whenever Command is "" the message is for a turn: Error is empty, and
// Text is what the model sees (text itself when it held no directive).
// Queue is Directives.Queue (the session's when Command is CommandQueue,
// this message's otherwise), Model the model of a lone /model.
func ParseMessage(text string, opts ParseOptions) Parsed {
	if p, ok := parseFixedCommand(text); ok {
		return p
	}
	trimmed := strings.TrimSpace(text)
	if opts.isResetWord(trimmed) {
		return Parsed{Command: CommandNew}
	}
	if p, ok := parseWholeCommand(trimmed); ok {
		return p
	}
	return parseDirectives(text)
}

// parseWholeCommand reads the commands that are only ever a whole message.
func parseWholeCommand(trimmed string) (Parsed, bool) {
	name, rest := splitCommand(trimmed)
	switch name {
	case "help", "commands":
		return Parsed{Command: CommandHelp}, rest == ""
	case "whoami", "context", "export":
		return Parsed{Command: CommandName(name)}, rest == ""
	case "compact":
		if n := utf8.RuneCountInString(rest); n > MaxCompactFocusRunes {
			return Parsed{Command: CommandCompact, Error: fmt.Sprintf(
				"the focus of /compact is at most %d characters, this one has %d; shorten it", MaxCompactFocusRunes, n)}, true
		}
		return Parsed{Command: CommandCompact, Focus: rest}, true
	case "heartbeat":
		return parseHeartbeatCommand(rest), true
	case "send":
		if rest == "" {
			return Parsed{Command: CommandSend}, true
		}
		on, err := parseOnOff(strings.Fields(rest), useSend)
		if err != nil {
			return Parsed{Command: CommandSend, Error: CutBytes(err.Error(), maxErrorBytes)}, true
		}
		return Parsed{Command: CommandSend, Send: &on}, true
	case "think", "verbose", "usage", "model", "queue":
		fields := strings.Fields(rest)
		switch {
		case len(fields) == 0:
			return Parsed{Command: directiveCommands[name]}, true
		case len(fields) == 1 && (strings.EqualFold(fields[0], "default") || strings.EqualFold(fields[0], "reset")):
			if name == "model" {
				return Parsed{Command: CommandModel, ModelReset: true}, true
			}
			if name == "queue" {
				return Parsed{Command: CommandQueue, QueueReset: true}, true
			}
		}
	}
	return Parsed{}, false
}

// Actions of /heartbeat (Parsed.HeartbeatAction); "" shows the
// heartbeat.
const (
	HeartbeatSet = "set"
	HeartbeatOff = "off"
	HeartbeatNow = "now"
)

func parseHeartbeatCommand(rest string) Parsed {
	p := Parsed{Command: CommandHeartbeat}
	switch word := strings.ToLower(strings.TrimRight(rest, ".!")); word {
	case "":
	case HeartbeatOff, HeartbeatNow:
		p.HeartbeatAction = word
	default:
		spec, err := ParseHeartbeat(rest)
		if err != nil {
			p.Error = CutBytes("/heartbeat: "+err.Error()+" (use /heartbeat every 30m [08:00-22:00] [time zone], off or now)", maxErrorBytes)
			return p
		}
		p.HeartbeatAction, p.Heartbeat = HeartbeatSet, &spec
	}
	return p
}

// parseDirectives reads the directives anywhere in text. Taking one out
// may turn what is left of its line into a code fence ("/think high ```"),
// which changes what is code below it; so the text left is read again
// until no directive is left in what the model sees.
func parseDirectives(text string) Parsed {
	var d Directives
	var toks []directiveToken
	p := Parsed{Text: text}
	for found := findDirectives(text); len(found) > 0; found = findDirectives(p.Text) {
		if toks = append(toks, found...); len(toks) > maxDirectives {
			return Parsed{Command: CommandDirectives, Error: fmt.Sprintf(
				"a message may carry at most %d directives; send the others in a message of their own", maxDirectives)}
		}
		for _, tok := range found {
			if err := d.set(tok.name, tok.args); err != nil {
				return Parsed{Command: directiveCommands[tok.name], Error: CutBytes(err.Error(), maxErrorBytes)}
			}
		}
		p.Text = withoutDirectives(p.Text, found)
	}
	p.Directives, p.Queue = d, d.Queue
	if p.Text != "" || len(toks) == 0 {
		return p
	}
	p.DirectivesOnly, p.Command = true, CommandDirectives
	if oneKind(toks) {
		p.Command = directiveCommands[toks[0].name]
		if d.Model != nil {
			p.Model = *d.Model
		}
	}
	return p
}

func oneKind(toks []directiveToken) bool {
	for _, t := range toks[1:] {
		if t.name != toks[0].name {
			return false
		}
	}
	return true
}
