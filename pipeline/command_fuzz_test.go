package pipeline

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		"/think high explain", "a /think: low b", "/think@bot:high", "/model openai/x hi", "/queue collect cap:3 hi",
		"/queue: debounce:2s drop:old", "x\n/verbose on\ny", "/usage full /usage full", "`/think high`", "```\n/think high\n```",
		"https://x.y/think/high", "src/think/high.go", "/thinking", "/compact keep it", "/send on", "/help", "stop!",
		"claim-0a1b2c3d", "new chat", "/think high ```\n```\n/verbose on\n```", "a\r\n/usage tokens\r\nb", "/think\u2028high",
	} {
		f.Add(s)
	}
	resetWords := ParseOptions{ResetWords: []string{"new chat", "start over"}}
	f.Fuzz(func(t *testing.T, text string) {
		p := ParseMessage(text, ParseOptions{})
		require.Equal(t, p, ParseMessage(text, ParseOptions{}), "the same text parses the same")
		if with := ParseMessage(text, resetWords); with.Command != CommandNew {
			require.Equal(t, p, with, "reset words change only what becomes /new")
		}
		checkParsed(t, text, p)
	})
}

// checkParsed holds the promises of ParseMessage's doc and of the
// issue: what is for a turn, what the text keeps, and that every value
// set is a valid one.
func checkParsed(t *testing.T, text string, p Parsed) {
	switch {
	case p.Command != "":
		require.Empty(t, p.Text, "a command carries no text")
	default:
		require.Empty(t, p.Error, "an error is answered as a command is")
		require.False(t, p.DirectivesOnly)
	}
	if p.Error != "" {
		require.False(t, p.Directives.Any(), "nothing is set by a message with an error")
		require.LessOrEqual(t, len(p.Error), maxErrorBytes)
	}
	if p.DirectivesOnly {
		require.True(t, p.Directives.Any())
	}
	require.True(t, p.IsDirective() || p.Text == text, "text without a directive reaches the model unchanged")
	require.LessOrEqual(t, len(p.Text), len(text), "directives only ever leave the text")
	require.LessOrEqual(t, utf8.RuneCountInString(p.Focus), MaxCompactFocusRunes)
	require.Same(t, p.Directives.Queue, p.Queue, "Queue is the directives' queue")
	checkDirectiveValues(t, p.Directives)

	require.Empty(t, findDirectives(p.Text), "a directive left in the text: %q", p.Text)
	if !strings.ContainsAny(text, "`~") { // no code: every word that names a directive is one
		for _, word := range strings.Fields(p.Text) {
			name, _, _ := strings.Cut(strings.ToLower(word), "@")
			name, _, _ = strings.Cut(name, ":")
			_, isDirective := directiveCommands[strings.TrimPrefix(name, "/")]
			require.False(t, strings.HasPrefix(name, "/") && isDirective, "directive %q left in the text %q", word, p.Text)
		}
	}
}

func checkDirectiveValues(t *testing.T, d Directives) {
	if d.Think != nil {
		require.Contains(t, ThinkLevels, *d.Think)
	}
	if d.Usage != nil {
		require.Contains(t, UsageModes, *d.Usage)
	}
	if d.Model != nil {
		_, _, err := ParseModelName(*d.Model)
		require.NoError(t, err)
		require.LessOrEqual(t, len(*d.Model), MaxModelNameBytes)
		require.NotContains(t, *d.Model, "`")
	}
	if q := d.Queue; q != nil {
		assert.True(t, q.Mode == nil || slices.Contains(QueueModes, *q.Mode))
		assert.True(t, q.Drop == nil || slices.Contains(DropPolicies, *q.Drop))
		assert.True(t, q.Cap == nil || (*q.Cap >= 1 && *q.Cap <= MaxQueueCap), "cap %v", q.Cap)
		assert.True(t, q.Debounce == nil || (*q.Debounce >= 0 && q.Debounce.D() <= MaxDebounce))
	}
}
