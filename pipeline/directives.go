package pipeline

import (
	"errors"
	"fmt"
	"strings"
)

// ThinkLevel is the reasoning effort a turn asks of a provider that takes
// one (OpenAI's reasoning_effort, Anthropic's extended thinking).
type ThinkLevel string

const (
	ThinkOff    ThinkLevel = "off"
	ThinkLow    ThinkLevel = "low"
	ThinkMedium ThinkLevel = "medium"
	ThinkHigh   ThinkLevel = "high"
)

// ThinkLevels lists every level, for help texts and validation.
var ThinkLevels = []ThinkLevel{ThinkOff, ThinkLow, ThinkMedium, ThinkHigh}

// UsageMode is the usage footer under each reply.
type UsageMode string

const (
	UsageOff    UsageMode = "off"
	UsageTokens UsageMode = "tokens"
	// UsageFull adds the cost where the provider gives it.
	UsageFull UsageMode = "full"
)

// UsageModes lists every mode.
var UsageModes = []UsageMode{UsageOff, UsageTokens, UsageFull}

// MaxModelNameBytes bounds a model named by /model in ParseMessage.
const MaxModelNameBytes = 128

// Directives are the settings a message carries: for its own turn only,
// or for the session when the message holds nothing else
// (Parsed.DirectivesOnly). A nil field is not set.
type Directives struct {
	Think   *ThinkLevel `json:"think,omitempty"`
	Verbose *bool       `json:"verbose,omitempty"`
	// Model is "provider/model" (ParseModelName accepts it).
	Model *string     `json:"model,omitempty"`
	Queue *QueuePatch `json:"queue,omitempty"`
	Usage *UsageMode  `json:"usage,omitempty"`
}

// Any is true when at least one directive is set.
func (d Directives) Any() bool {
	return d.Think != nil || d.Verbose != nil || d.Model != nil || d.Queue != nil || d.Usage != nil
}

// Over is d with base's settings where d sets none: a later message's
// directives over an earlier one's, for a turn that answers both.
func (d Directives) Over(base *Directives) Directives {
	if base == nil {
		return d
	}
	out := *base
	if d.Think != nil {
		out.Think = d.Think
	}
	if d.Verbose != nil {
		out.Verbose = d.Verbose
	}
	if d.Model != nil {
		out.Model = d.Model
	}
	if d.Queue != nil {
		out.Queue = d.Queue
	}
	if d.Usage != nil {
		out.Usage = d.Usage
	}
	return out
}

// Describe renders the set directives for an acknowledgement, in a fixed
// order: "think high, verbose on, model openai/gpt-4o, queue collect cap 3,
// usage full".
func (d Directives) Describe() string {
	var parts []string
	if d.Think != nil {
		parts = append(parts, "think "+string(*d.Think))
	}
	if d.Verbose != nil {
		parts = append(parts, "verbose "+onOff(*d.Verbose))
	}
	if d.Model != nil {
		parts = append(parts, "model "+*d.Model)
	}
	if d.Queue != nil {
		parts = append(parts, strings.TrimSpace("queue "+d.Queue.describe()))
	}
	if d.Usage != nil {
		parts = append(parts, "usage "+string(*d.Usage))
	}
	return strings.Join(parts, ", ")
}

func (p *QueuePatch) describe() string {
	var parts []string
	if p.Mode != nil {
		parts = append(parts, string(*p.Mode))
	}
	if p.Debounce != nil {
		parts = append(parts, "debounce "+p.Debounce.String())
	}
	if p.Cap != nil {
		parts = append(parts, fmt.Sprintf("cap %d", *p.Cap))
	}
	if p.Drop != nil {
		parts = append(parts, "drop "+string(*p.Drop))
	}
	return strings.Join(parts, " ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// directiveCommands are the directives, by the name typed after "/", and
// the command each is when it is the whole message.
var directiveCommands = map[string]CommandName{
	"think": CommandThink, "verbose": CommandVerbose, "model": CommandModel, "queue": CommandQueue, "usage": CommandUsage,
}

// Usage lines of the directives and of /send, for their errors.
const (
	useThink   = "use /think off, low, medium or high"
	useVerbose = "use /verbose on or off"
	useUsage   = "use /usage off, tokens or full"
	useSend    = "use /send on or off"
	useModel   = "use /model provider/model, or /model default"
	useQueue   = "use /queue <mode> [debounce:2s] [cap:25] [drop:old|new|summarize]"
)

// set records the directive named name with its argument words (a /queue
// takes several, the others one) into d. A directive given twice must say
// the same both times.
func (d *Directives) set(name string, args []string) error {
	switch name {
	case "think":
		level, err := pickWord(args, ThinkLevels, useThink)
		if err != nil {
			return err
		}
		return mergeOne(name, &d.Think, &level)
	case "verbose":
		on, err := parseOnOff(args, useVerbose)
		if err != nil {
			return err
		}
		return mergeOne(name, &d.Verbose, &on)
	case "usage":
		mode, err := pickWord(args, UsageModes, useUsage)
		if err != nil {
			return err
		}
		return mergeOne(name, &d.Usage, &mode)
	case "model":
		model, err := parseModelWord(args)
		if err != nil {
			return err
		}
		return mergeOne(name, &d.Model, &model)
	case "queue":
		patch, err := parseQueueWords(args)
		if err != nil {
			return err
		}
		return mergeQueue(&d.Queue, patch)
	}
	return fmt.Errorf("/%s is no directive", name)
}

// mergeOne sets *have to next unless it holds another value already.
// (No reflect.DeepEqual: the session workflow parses messages, and the
// determinism checker rightly cannot prove reflection deterministic.)
func mergeOne[T comparable](name string, have **T, next *T) error {
	if *have != nil && **have != *next {
		return fmt.Errorf("/%s is given twice with different settings; keep one", name)
	}
	*have = next
	return nil
}

// mergeQueue is mergeOne for a /queue patch, compared by what it says.
func mergeQueue(have **QueuePatch, next *QueuePatch) error {
	if *have != nil && (*have).describe() != next.describe() {
		return errors.New("/queue is given twice with different settings; keep one")
	}
	*have = next
	return nil
}

// pickWord reads the one argument as one of names, ignoring case and a
// trailing sentence mark ("/think high." ends a sentence).
func pickWord[T ~string](args []string, names []T, use string) (T, error) {
	word := ""
	if len(args) == 1 {
		word = strings.TrimRight(args[0], ".,;!?")
		for _, n := range names {
			if strings.EqualFold(word, string(n)) {
				return n, nil
			}
		}
	}
	return "", usageError(use, args)
}

func parseOnOff(args []string, use string) (bool, error) {
	v, err := pickWord(args, []string{"on", "off"}, use)
	return v == "on", err
}

func usageError(use string, args []string) error {
	if len(args) == 0 {
		return errors.New(use)
	}
	return fmt.Errorf("%s (got %q)", use, CutBytes(strings.Join(args, " "), 40))
}

// parseModelWord reads a /model inside a message: one provider/model.
// Resetting to the default chain is for the session only, so "default"
// is refused here and works when /model default is the whole message.
func parseModelWord(args []string) (string, error) {
	switch {
	case len(args) != 1:
		return "", errors.New(useModel)
	case strings.EqualFold(args[0], "default") || strings.EqualFold(args[0], "reset"):
		return "", fmt.Errorf("/model %s goes back to the default chain for the session: send it as a message of its own", strings.ToLower(args[0]))
	case len(args[0]) > MaxModelNameBytes:
		return "", fmt.Errorf("a model name is at most %d bytes; use /model provider/model", MaxModelNameBytes)
	case strings.ContainsRune(args[0], '`'):
		// No model name holds one, and taking it out of the text with
		// the directive would change what is code there.
		return "", fmt.Errorf("model %q holds a backtick; use /model provider/model", CutBytes(args[0], 40))
	}
	if _, _, err := ParseModelName(args[0]); err != nil {
		return "", err
	}
	return args[0], nil
}

// parseQueueWords reads /queue's words: a mode or an option first, then
// options key:value (the mode and options together at most maxDirectives
// words; the scanner reads no more).
func parseQueueWords(args []string) (*QueuePatch, error) {
	if len(args) == 0 {
		return nil, errors.New(useQueue)
	}
	if strings.EqualFold(args[0], "default") || strings.EqualFold(args[0], "reset") {
		return nil, fmt.Errorf("/queue %s goes back to the default settings for the session: send it as a message of its own", strings.ToLower(args[0]))
	}
	patch := &QueuePatch{}
	rest := args
	if mode, err := ParseQueueMode(args[0]); err == nil {
		patch.Mode = &mode
		rest = args[1:]
	} else if !strings.Contains(args[0], ":") {
		return nil, err
	}
	for _, word := range rest {
		key, value, _ := strings.Cut(word, ":")
		if err := setQueueOption(patch, strings.ToLower(key), value); err != nil {
			return nil, err
		}
	}
	return patch, nil
}
