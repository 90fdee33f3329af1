package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Limits on what a /queue directive may set.
const (
	MaxQueueCap   = 1000
	MaxDebounce   = time.Minute
	maxDirectives = 8
)

// CommandName names a command that the session answers itself, without
// the model.
type CommandName string

const (
	CommandStatus CommandName = "status"
	// CommandQueue is a /queue directive sent alone: it changes the
	// session's queue settings (or, with no arguments, shows them).
	CommandQueue CommandName = "queue"
	// CommandStop aborts the running turn and clears the queue.
	CommandStop CommandName = "stop"
	// CommandModel shows or sets the session's model (strict: no fallback).
	CommandModel CommandName = "model"
	// CommandDecide is /approve <id> or /reject <id> [reason].
	CommandDecide CommandName = "decide"
	// CommandClaim is a one-time claim code: its sender becomes an owner.
	CommandClaim CommandName = "claim"
	// CommandActivation shows or sets the chat's activation mode.
	CommandActivation CommandName = "activation"
	// CommandNew starts a new transcript and keeps the settings (/new,
	// /reset).
	CommandNew CommandName = "new"
)

// stopWords abort when they are the whole message, whatever the case and
// trailing punctuation ("Stop!", "wait...").
var stopWords = []string{"stop", "abort", "wait", "esc"}

// Parsed is what the rules make of a message's text.
type Parsed struct {
	// Command is set when the whole message is a command.
	Command CommandName `json:"command,omitempty"`
	// Queue is the /queue directive's settings: for the session when
	// Command is CommandQueue, for this one message otherwise.
	Queue *QueuePatch `json:"queue,omitempty"`
	// QueueReset is true for "/queue default": drop the session's override.
	QueueReset bool `json:"queue_reset,omitempty"`
	// Decision is the /approve or /reject command's (By is left to the
	// session, which knows the sender).
	Decision *Decision `json:"decision,omitempty"`
	// Code is the claim code of CommandClaim.
	Code string `json:"code,omitempty"`
	// Activation is the mode /activation chose.
	Activation string `json:"activation,omitempty"`
	// Model is the model /model chose; ModelReset is "/model default".
	Model      string `json:"model,omitempty"`
	ModelReset bool   `json:"model_reset,omitempty"`
	// Text is the message without its directives.
	Text string `json:"text"`
	// Error explains a directive that could not be understood; the
	// session answers it instead of running a turn.
	Error string `json:"error,omitempty"`

	// Directives are the message's directives: for its own turn, or for
	// the session when DirectivesOnly.
	Directives Directives `json:"directives,omitzero"`
	// DirectivesOnly: the message held nothing but directives, which set
	// the session's settings and are acknowledged. Command is then the
	// directive's command, or CommandDirectives for several.
	DirectivesOnly bool `json:"directives_only,omitempty"`
	// Focus is what /compact's summary is to keep in view ("" for none).
	Focus string `json:"focus,omitempty"`
	// Send is /send on (true) or off (false); nil asks for the setting.
	Send *bool `json:"send,omitempty"`
	// HeartbeatAction is /heartbeat's (HeartbeatSet, HeartbeatOff,
	// HeartbeatNow, "" to show it); Heartbeat the spec it sets.
	HeartbeatAction string         `json:"heartbeat_action,omitempty"`
	Heartbeat       *HeartbeatSpec `json:"heartbeat,omitempty"`
}

// IsDirective is true when the message carried a directive or command,
// which makes it skip the debounce window.
func (p Parsed) IsDirective() bool {
	return p.Command != "" || p.Queue != nil || p.Error != "" || p.Directives.Any()
}

// parseFixedCommand reads the commands whose words are fixed and that are
// a whole message: a claim code, a stop word, /status, /stop, /new,
// /reset, /activation, /approve and /reject. ok is false for anything
// else, which ParseMessage reads on.
func parseFixedCommand(text string) (p Parsed, ok bool) {
	trimmed := strings.TrimSpace(text)
	if IsClaimCode(trimmed) {
		return Parsed{Command: CommandClaim, Code: trimmed}, true
	}
	if isStopWord(trimmed) {
		return Parsed{Command: CommandStop}, true
	}
	name, rest := splitCommand(trimmed)
	switch name {
	case "status", "stop", "new":
		if rest == "" {
			return Parsed{Command: CommandName(name)}, true
		}
	case "reset":
		if rest == "" {
			return Parsed{Command: CommandNew}, true
		}
	case "activation":
		switch mode := strings.ToLower(rest); mode {
		case "":
			return Parsed{Command: CommandActivation}, true
		case ActivationMention, ActivationSmart, ActivationGated, ActivationAlways:
			return Parsed{Command: CommandActivation, Activation: mode}, true
		}
		return Parsed{Command: CommandActivation, Error: "use /activation mention, smart, gated or always"}, true
	case DecisionApprove, DecisionReject:
		id, reason, _ := strings.Cut(rest, " ")
		if id == "" {
			return Parsed{Command: CommandDecide, Error: "use /" + name + " <proposal id>" + map[bool]string{true: " [reason]"}[name == DecisionReject]}, true
		}
		return Parsed{Command: CommandDecide, Decision: &Decision{ID: id, Decision: name, Reason: strings.TrimSpace(reason)}}, true
	}
	return Parsed{}, false
}

// IsClaimCode is true for a whole message that is a claim code.
func IsClaimCode(text string) bool {
	rest, ok := strings.CutPrefix(text, "claim-")
	if !ok || len(rest) < 8 || len(rest) > 32 {
		return false
	}
	for _, r := range rest {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

func isStopWord(text string) bool {
	word := strings.TrimRightFunc(text, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	for _, w := range stopWords {
		if strings.EqualFold(word, w) {
			return true
		}
	}
	return false
}

// splitCommand returns the lower-cased command name of "/name@bot rest"
// and the rest, or "" when text does not start with a command.
func splitCommand(text string) (string, string) {
	if !strings.HasPrefix(text, "/") {
		return "", text
	}
	head, rest, _ := strings.Cut(text[1:], " ")
	if i := strings.IndexAny(head, "\n\t"); i >= 0 {
		rest = head[i:] + " " + rest
		head = head[:i]
	}
	head, _, _ = strings.Cut(head, "@") // a command addressed to a bot: /status@my_bot
	return strings.ToLower(head), strings.TrimSpace(rest)
}

func setQueueOption(p *QueuePatch, key, value string) error {
	switch key {
	case "debounce":
		d, err := parseDebounce(value)
		if err != nil {
			return err
		}
		p.Debounce = &d
	case "cap":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > MaxQueueCap {
			return fmt.Errorf("cap must be a whole number from 1 to %d, got %q", MaxQueueCap, value)
		}
		p.Cap = &n
	case "drop":
		d, err := ParseDropPolicy(value)
		if err != nil {
			return err
		}
		p.Drop = &d
	default:
		return fmt.Errorf("unknown /queue option %q; use debounce:2s, cap:25 or drop:old|new|summarize", key)
	}
	return nil
}

// parseDebounce reads "2s", "1500ms" or a bare number of milliseconds.
func parseDebounce(value string) (Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil {
		ms, nerr := strconv.Atoi(value)
		if nerr != nil {
			return 0, fmt.Errorf("debounce must be a duration like 2s or 1500ms, got %q", value)
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d < 0 || d > MaxDebounce {
		return 0, fmt.Errorf("debounce must be between 0 and %s, got %s", MaxDebounce, d)
	}
	return Duration(d), nil
}

// remainder returns args without its first n whitespace-separated fields,
// keeping the rest's own line breaks.
func remainder(args string, n int) string {
	rest := args
	for range n {
		rest = strings.TrimLeft(rest, " \t\n\r")
		if i := strings.IndexAny(rest, " \t\n\r"); i >= 0 {
			rest = rest[i:]
		} else {
			rest = ""
		}
	}
	return strings.TrimSpace(rest)
}
