package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parsePlain parses text with no reset words configured.
func parsePlain(text string) Parsed { return ParseMessage(text, ParseOptions{}) }

func TestParseMessageCommands(t *testing.T) {
	on, off := true, false
	cases := []struct {
		text string
		want Parsed
	}{
		{"/help", Parsed{Command: CommandHelp}},
		{"/commands", Parsed{Command: CommandHelp}},
		{" /HELP@my_bot ", Parsed{Command: CommandHelp}},
		{"/help me with this", Parsed{Text: "/help me with this"}},
		{"/whoami", Parsed{Command: CommandWhoami}},
		{"/context", Parsed{Command: CommandContext}},
		{"/export", Parsed{Command: CommandExport}},
		{"/export everything", Parsed{Text: "/export everything"}},
		{"/compact", Parsed{Command: CommandCompact}},
		{"/compact keep the API design\nand the open bugs", Parsed{Command: CommandCompact, Focus: "keep the API design\nand the open bugs"}},
		{"/send", Parsed{Command: CommandSend}},
		{"/send ON", Parsed{Command: CommandSend, Send: &on}},
		{"/send off", Parsed{Command: CommandSend, Send: &off}},
		{"/send maybe", Parsed{Command: CommandSend, Error: `use /send on or off (got "maybe")`}},
		{"/think", Parsed{Command: CommandThink}},
		{"/verbose", Parsed{Command: CommandVerbose}},
		{"/usage", Parsed{Command: CommandUsage}},
		{"/usage@my_bot", Parsed{Command: CommandUsage}},
		{"/model", Parsed{Command: CommandModel}},
		{"/model default", Parsed{Command: CommandModel, ModelReset: true}},
		{"/MODEL Reset", Parsed{Command: CommandModel, ModelReset: true}},
		{"/queue", Parsed{Command: CommandQueue}},
		{"/queue default", Parsed{Command: CommandQueue, QueueReset: true}},
		// The fixed commands.
		{"/status", Parsed{Command: CommandStatus}},
		{"/stop", Parsed{Command: CommandStop}},
		{"Stop!", Parsed{Command: CommandStop}},
		{" wait... ", Parsed{Command: CommandStop}},
		{"/new", Parsed{Command: CommandNew}},
		{"/reset", Parsed{Command: CommandNew}},
		{" claim-0a1b2c3d4e5f ", Parsed{Command: CommandClaim, Code: "claim-0a1b2c3d4e5f"}},
		{"/activation smart", Parsed{Command: CommandActivation, Activation: "smart"}},
		{"/approve p3-1", Parsed{Command: CommandDecide, Decision: &Decision{ID: "p3-1", Decision: DecisionApprove}}},
		{"/reject p3-1 too much", Parsed{Command: CommandDecide, Decision: &Decision{ID: "p3-1", Decision: DecisionReject, Reason: "too much"}}},
		{"/shrug ok", Parsed{Text: "/shrug ok"}},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			assert.Equal(t, c.want, parsePlain(c.text))
		})
	}
}

func TestParseMessageCompactFocusIsBounded(t *testing.T) {
	fits := strings.Repeat("é", MaxCompactFocusRunes)
	assert.Equal(t, Parsed{Command: CommandCompact, Focus: fits}, parsePlain("/compact "+fits))
	assert.Equal(t, Parsed{Command: CommandCompact, Error: "the focus of /compact is at most 500 characters, this one has 501; shorten it"},
		parsePlain("/compact "+fits+"é"))
}

// dirs builds the Directives of a case from pairs of name and value.
func dirs(kv ...any) Directives {
	var d Directives
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case ThinkLevel:
			d.Think = &v
		case UsageMode:
			d.Usage = &v
		case bool:
			d.Verbose = &v
		case string:
			d.Model = &v
		case *QueuePatch:
			d.Queue = v
		}
	}
	return d
}

// turn is what a message for a turn parses to.
func turn(text string, d Directives) Parsed { return Parsed{Text: text, Directives: d, Queue: d.Queue} }

func TestParseMessageDirectives(t *testing.T) {
	collect := &QueuePatch{Mode: ptr(QueueCollect)}
	cases := []struct {
		name, text string
		want       Parsed
	}{
		{"think at the start", "/think high explain recursion", turn("explain recursion", dirs("think", ThinkHigh))},
		{"in the middle", "please /think low explain", turn("please explain", dirs("think", ThinkLow))},
		{"at the end", "explain recursion /think medium", turn("explain recursion", dirs("think", ThinkMedium))},
		{"with a colon", "explain /think: high", turn("explain", dirs("think", ThinkHigh))},
		{"colon attached", "explain /think:off", turn("explain", dirs("think", ThinkOff))},
		{"any case", "explain /THINK HIGH", turn("explain", dirs("think", ThinkHigh))},
		{"bot suffix", "explain /think@my_bot high", turn("explain", dirs("think", ThinkHigh))},
		{"bot suffix and colon", "explain /think@my_bot: high", turn("explain", dirs("think", ThinkHigh))},
		{"ends a sentence", "Explain recursion /think high. Then stop.", turn("Explain recursion Then stop.", dirs("think", ThinkHigh))},
		{"verbose", "run the tests /verbose on", turn("run the tests", dirs("verbose", true))},
		{"verbose off", "/verbose: off run them", turn("run them", dirs("verbose", false))},
		{"usage", "hi /usage tokens", turn("hi", dirs("usage", UsageTokens))},
		{"usage full", "/usage:full hi", turn("hi", dirs("usage", UsageFull))},
		{"model", "/model openai/gpt-4o tell me a joke", turn("tell me a joke", dirs("model", "openai/gpt-4o"))},
		{"model in the middle", "tell me /model: anthropic/claude-x a joke", turn("tell me a joke", dirs("model", "anthropic/claude-x"))},
		{"queue", "hi /queue collect there", turn("hi there", dirs("queue", collect))},
		{"queue with options", "hi /queue steer debounce:2s cap:3 drop:new there", turn("hi there", dirs("queue", &QueuePatch{
			Mode: ptr(QueueSteer), Debounce: ptr(Duration(2 * time.Second)), Cap: ptr(3), Drop: ptr(DropNew)}))},
		{"queue options only", "hi /queue: cap:5", turn("hi", dirs("queue", &QueuePatch{Cap: ptr(5)}))},
		{"several", "/think high summarize /verbose on this /usage full", turn("summarize this", dirs("think", ThinkHigh, "verbose", true, "usage", UsageFull))},
		{"the same twice", "/think high a /think high", turn("a", dirs("think", ThinkHigh))},
		// White space is tidied where a directive was, and only there.
		{"own line", "first line\n/think high\nsecond  line", turn("first line\nsecond  line", dirs("think", ThinkHigh))},
		{"own first line", "/think high\n\nthe question", turn("the question", dirs("think", ThinkHigh))},
		{"own last line", "the question\n\n/think high\n", turn("the question", dirs("think", ThinkHigh))},
		{"line end", "the question /think high\nmore", turn("the question\nmore", dirs("think", ThinkHigh))},
		{"tabs", "a\t/think high\tb", turn("a b", dirs("think", ThinkHigh))},
		{"CRLF", "a\r\n/think high\r\nb", turn("a\r\nb", dirs("think", ThinkHigh))},
		{"side by side", "a /think high /verbose on b", turn("a b", dirs("think", ThinkHigh, "verbose", true))},
		{"a fence the directive hid is read as one", "/think high ```\n```\n/verbose on\n```",
			turn("```\n```\n```", dirs("think", ThinkHigh, "verbose", true))},
		{"indentation kept elsewhere", "code:\n    x := 1 /think high\n    y := 2", turn("code:\n    x := 1\n    y := 2", dirs("think", ThinkHigh))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parsePlain(c.text)
			assert.Equal(t, c.want, got)
			assert.True(t, got.IsDirective(), "a message with directives skips the debounce window")
		})
	}
}

// Look-alikes stay text, untouched: the issue names words that only
// begin with a directive's name and names inside URLs and paths, and code
// is the user's, not an instruction.
func TestParseMessageLookAlikesAreText(t *testing.T) {
	for _, text := range []string{
		"/thinking about it",
		"/models are listed where?",
		"/Thinking hard",
		"/verbosely high",
		"/queued collect",
		"/usage_stats full",
		"/think-tank high",
		"/think, high",
		"/think/high",
		"see https://x.y/think/high",
		"see https://x.y/think high",
		"edit src/think/high.go",
		"edit a/think high",
		"run ./think high",
		"open ~/think high",
		"(/think high)",
		"\"/think high\"",
		"use `/think high` to think harder",
		"use ``/think `high` now`` like so",
		"use ` /think high ` with spaces",
		"a code span `over\n/think high\nlines` stays",
		"```\n/think high\n```",
		"~~~ text\n/verbose on\n~~~",
		"```go\n// /model openai/x\n",
		"  ```\n/usage full\n  ```\nafter",
		"/shrug /thinkers /model_x",
		"mail me at a/model@b.c",
	} {
		t.Run(text, func(t *testing.T) {
			assert.Equal(t, Parsed{Text: text}, parsePlain(text))
		})
	}
}

func TestParseMessageDirectivesOnlySetTheSession(t *testing.T) {
	collect := &QueuePatch{Mode: ptr(QueueCollect)}
	only := func(cmd CommandName, d Directives) Parsed {
		return Parsed{Command: cmd, DirectivesOnly: true, Directives: d, Queue: d.Queue}
	}
	cases := []struct {
		text string
		want Parsed
	}{
		{"/think high", only(CommandThink, dirs("think", ThinkHigh))},
		{" /think: HIGH \n", only(CommandThink, dirs("think", ThinkHigh))},
		{"/think@my_bot low", only(CommandThink, dirs("think", ThinkLow))},
		{"/verbose on", only(CommandVerbose, dirs("verbose", true))},
		{"/usage off", only(CommandUsage, dirs("usage", UsageOff))},
		{"/queue collect", only(CommandQueue, dirs("queue", collect))},
		{"/think high /think high", only(CommandThink, dirs("think", ThinkHigh))},
		{"/think high\n/verbose off", only(CommandDirectives, dirs("think", ThinkHigh, "verbose", false))},
		{"/queue collect /usage full", only(CommandDirectives, dirs("queue", collect, "usage", UsageFull))},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			assert.Equal(t, c.want, parsePlain(c.text))
		})
	}
	// A lone /model also fills Model.
	model := "openai/gpt-4o"
	assert.Equal(t, Parsed{Command: CommandModel, Model: model, DirectivesOnly: true, Directives: Directives{Model: &model}}, parsePlain("/model openai/gpt-4o"))
	assert.Equal(t, Parsed{Command: CommandDirectives, DirectivesOnly: true, Directives: Directives{Model: &model, Think: ptr(ThinkLow)}},
		parsePlain("/model openai/gpt-4o /think low"), "Model is a lone /model's only")
}

func TestParseMessageErrors(t *testing.T) {
	cases := []struct {
		text string
		want Parsed
	}{
		{"/think ultra", Parsed{Command: CommandThink, Error: `use /think off, low, medium or high (got "ultra")`}},
		{"explain /think ultra", Parsed{Command: CommandThink, Error: `use /think off, low, medium or high (got "ultra")`}},
		{"explain /think", Parsed{Command: CommandThink, Error: "use /think off, low, medium or high"}},
		{"explain /think:", Parsed{Command: CommandThink, Error: "use /think off, low, medium or high"}},
		{"explain /think\nhigh", Parsed{Command: CommandThink, Error: "use /think off, low, medium or high"}},
		{"/verbose yes", Parsed{Command: CommandVerbose, Error: `use /verbose on or off (got "yes")`}},
		{"a /usage cost", Parsed{Command: CommandUsage, Error: `use /usage off, tokens or full (got "cost")`}},
		{"/model gpt-4o", Parsed{Command: CommandModel, Error: `model "gpt-4o" is not provider/model (providers: openai, anthropic, demo)`}},
		{"hi /model acme/x", Parsed{Command: CommandModel, Error: `model "acme/x" has an unknown provider "acme" (providers: openai, anthropic, demo)`}},
		{"hi /model default", Parsed{Command: CommandModel, Error: "/model default goes back to the default chain for the session: send it as a message of its own"}},
		{"/model openai/" + strings.Repeat("x", MaxModelNameBytes), Parsed{Command: CommandModel, Error: "a model name is at most 128 bytes; use /model provider/model"}},
		{"/model openai/`x` hi", Parsed{Command: CommandModel, Error: "model \"openai/`x`\" holds a backtick; use /model provider/model"}},
		{"/queue sideways", Parsed{Command: CommandQueue, Error: `unknown queue mode "sideways"; use one of followup, collect, steer, steer-backlog, interrupt`}},
		{"hi /queue", Parsed{Command: CommandQueue, Error: "use /queue <mode> [debounce:2s] [cap:25] [drop:old|new|summarize]"}},
		{"hi /queue reset", Parsed{Command: CommandQueue, Error: "/queue reset goes back to the default settings for the session: send it as a message of its own"}},
		{"hi /queue collect cap:0", Parsed{Command: CommandQueue, Error: `cap must be a whole number from 1 to 1000, got "0"`}},
		{"hi /queue collect color:red", Parsed{Command: CommandQueue, Error: `unknown /queue option "color"; use debounce:2s, cap:25 or drop:old|new|summarize`}},
		{"/think high a /think low", Parsed{Command: CommandThink, Error: "/think is given twice with different settings; keep one"}},
		{"/queue collect a /queue steer", Parsed{Command: CommandQueue, Error: "/queue is given twice with different settings; keep one"}},
		{"a" + strings.Repeat(" /think high", maxDirectives+1), Parsed{Command: CommandDirectives, Error: "a message may carry at most 8 directives; send the others in a message of their own"}},
		{"/think " + strings.Repeat("x", 1000), Parsed{Command: CommandThink, Error: `use /think off, low, medium or high (got "` + strings.Repeat("x", 37) + `…")`}},
	}
	for _, c := range cases {
		t.Run(CutBytes(c.text, 60), func(t *testing.T) {
			got := parsePlain(c.text)
			assert.Equal(t, c.want, got)
			assert.True(t, got.IsDirective(), "an error is answered, not debounced")
		})
	}
	// At the bound, the same directive repeated is still fine.
	assert.Equal(t, turn("a", dirs("think", ThinkHigh)), parsePlain("a"+strings.Repeat(" /think high", maxDirectives)))
}

func TestParseMessageResetWords(t *testing.T) {
	opts := ParseOptions{ResetWords: []string{"new chat", "Start  over!"}}
	require.NoError(t, opts.Validate())
	for _, text := range []string{"new chat", " NEW   chat. ", "start over", "Start over!!"} {
		assert.Equal(t, Parsed{Command: CommandNew}, ParseMessage(text, opts), text)
	}
	for _, text := range []string{"new chat please", "a new chat", "start"} {
		assert.Equal(t, Parsed{Text: text}, ParseMessage(text, opts), text)
	}
	assert.Equal(t, Parsed{Text: "new chat"}, parsePlain("new chat"), "no reset words unless configured")
	assert.Equal(t, Parsed{Command: CommandStop}, ParseMessage("stop", ParseOptions{ResetWords: []string{"stop"}}), "a stop word stays a stop word")

	tooMany := make([]string, MaxResetWords+1)
	for i := range tooMany {
		tooMany[i] = "word" + strings.Repeat("x", i)
	}
	assert.Equal(t, Parsed{Text: tooMany[MaxResetWords]}, ParseMessage(tooMany[MaxResetWords], ParseOptions{ResetWords: tooMany}), "only the first MaxResetWords are read")
	long := strings.Repeat("a", MaxResetWordBytes+1)
	assert.Equal(t, Parsed{Text: long}, ParseMessage(long, ParseOptions{ResetWords: []string{long}}))

	for words, want := range map[string]string{
		"":      `reset word "" is empty once trailing punctuation is dropped; remove it`,
		"?!":    `reset word "?!" is empty once trailing punctuation is dropped; remove it`,
		"stop":  `reset word "stop" already means something else here (/stop); pick another`,
		"/help": `reset word "/help" already means something else here (/help); pick another`,
		long:    `reset word "` + strings.Repeat("a", 37) + `…" is longer than 64 bytes; use a shorter one`,
	} {
		assert.EqualError(t, ParseOptions{ResetWords: []string{"fine", words}}.Validate(), want)
	}
	assert.EqualError(t, ParseOptions{ResetWords: tooMany}.Validate(), "17 reset words are configured; at most 16 are read, so remove some")
}

func TestDirectivesDescribe(t *testing.T) {
	d := dirs("think", ThinkHigh, "verbose", false, "model", "openai/gpt-4o", "usage", UsageFull,
		"queue", &QueuePatch{Mode: ptr(QueueCollect), Debounce: ptr(Duration(2 * time.Second)), Cap: ptr(3), Drop: ptr(DropOld)})
	assert.Equal(t, "think high, verbose off, model openai/gpt-4o, queue collect debounce 2s cap 3 drop old, usage full", d.Describe())
	assert.Equal(t, "queue cap 5", dirs("queue", &QueuePatch{Cap: ptr(5)}).Describe())
	assert.Empty(t, Directives{}.Describe())
	assert.False(t, Directives{}.Any())
}

// commandFields is p without the directive fields: what code that reads
// Command, Queue and Model sees of it.
func commandFields(p Parsed) Parsed {
	p.Directives, p.DirectivesOnly, p.Focus, p.Send = Directives{}, false, "", nil
	return p
}

// A directive's words are on its line, and what follows it is the
// message's: the cases where reading commands from the start of a
// message alone would go wrong.
func TestParseMessageReadsDirectivesOnTheirLine(t *testing.T) {
	model := "openai/gpt-4o"
	cases := []struct {
		why, text string
		want      Parsed
	}{
		{"a /model may be followed by the message it is for", "/model openai/gpt-4o tell me a joke",
			Parsed{Text: "tell me a joke", Directives: Directives{Model: &model}}},
		{"so /model's error is about its one word", "/model gpt-4o please",
			Parsed{Command: CommandModel, Error: `model "gpt-4o" is not provider/model (providers: openai, anthropic, demo)`}},
		{"a directive's words are on its line", "/model\nopenai/gpt-4o",
			Parsed{Command: CommandModel, Error: "use /model provider/model, or /model default"}},
		{"and /queue's options too", "/queue collect\ncap:3",
			turn("cap:3", dirs("queue", &QueuePatch{Mode: ptr(QueueCollect)}))},
		{"/queue default does not swallow the text after it", "/queue default and hello",
			Parsed{Command: CommandQueue, Error: "/queue default goes back to the default settings for the session: send it as a message of its own"}},
		{"directives in the text after a /queue are read too", "/queue collect hi /think high",
			turn("hi", dirs("queue", &QueuePatch{Mode: ptr(QueueCollect)}, "think", ThinkHigh))},
		{"the colon form is a directive too", "/queue: collect",
			Parsed{Command: CommandQueue, DirectivesOnly: true, Directives: dirs("queue", &QueuePatch{Mode: ptr(QueueCollect)}),
				Queue: &QueuePatch{Mode: ptr(QueueCollect)}}},
		{"model names are bounded", "/model openai/" + strings.Repeat("x", MaxModelNameBytes),
			Parsed{Command: CommandModel, Error: "a model name is at most 128 bytes; use /model provider/model"}},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			assert.Equal(t, c.want, parsePlain(c.text))
		})
	}
}
