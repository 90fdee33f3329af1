package activities

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestParseGateAnswerIsStrict(t *testing.T) {
	got, err := ParseGateAnswer(` {"forward": true, "reason": "asks for help"} `)
	require.NoError(t, err)
	assert.Equal(t, pipeline.GateResult{Forward: true, Reason: "asks for help"}, got)
	got, err = ParseGateAnswer(`{"forward":false}`)
	require.NoError(t, err)
	assert.False(t, got.Forward)
	for _, bad := range []string{``, `yes`, `{"reason":"x"}`, `{"forward":"true"}`, `{"forward":true,"extra":1}`, `{"forward":true} {}`, "```json\n{\"forward\":true}\n```"} {
		_, err := ParseGateAnswer(bad)
		assert.Error(t, err, bad)
	}
}

// FuzzParseGateAnswer reads whatever the gate model wrote: it accepts
// only one JSON object with a boolean "forward" (and a string "reason"),
// and what it accepts says what the text said (the reason as logged).
func FuzzParseGateAnswer(f *testing.F) {
	for _, seed := range []string{`{"forward":true}`, ` {"forward": false, "reason": "chit-chat"} `, `{"forward":true} {}`, `{"forward":null}`, `yes`, "```json\n{\"forward\":true}\n```", `{"reason":"x"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseGateAnswer(text)
		if err != nil {
			return
		}
		var raw map[string]any
		if json.Unmarshal([]byte(text), &raw) != nil {
			t.Fatalf("accepted %q, which is not one JSON object", text)
		}
		if forward, ok := raw["forward"].(bool); !ok || forward != got.Forward {
			t.Fatalf("read %q as forward=%v", text, got.Forward)
		}
		if reason, _ := raw["reason"].(string); gateReason(reason) != got.Reason {
			t.Fatalf("read %q with reason %q", text, got.Reason)
		}
	})
}

// The gate's reason and errors reach the logs, and the answer may quote
// what anyone in the chat wrote: the reason comes back short and on one
// line, and an error names the problem, not a value or a key.
func TestParseGateAnswerKeepsTheAnswerOutOfTheLogs(t *testing.T) {
	// JSON escapes: a newline, an ANSI escape, a right-to-left override.
	quote := strings.Repeat(`bob said: my PIN is 1234\n\u001b[2K\u202e `, 300) + "é"
	require.Greater(t, len(quote), 10_000)
	got, err := ParseGateAnswer(`{"forward": true, "reason": "` + quote + `"}`)
	require.NoError(t, err)
	assert.True(t, got.Forward)
	assert.LessOrEqual(t, len(got.Reason), 100)
	assert.NotEmpty(t, got.Reason)
	assert.True(t, utf8.ValidString(got.Reason))
	assert.True(t, strings.HasPrefix(got.Reason, "bob said: my PIN is 1234 [2K bob said:"), "%.60q", got.Reason)
	assert.False(t, strings.ContainsFunc(got.Reason, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }),
		"a control character in the reason")
	// A cut never splits a character.
	got, err = ParseGateAnswer(`{"forward": false, "reason": "` + strings.Repeat("€", 60) + `"}`)
	require.NoError(t, err)
	assert.True(t, utf8.ValidString(got.Reason))
	assert.LessOrEqual(t, len(got.Reason), 100)

	const secret = "bobs-secret-PIN-1234"
	for _, bad := range []string{
		`{"forward": "` + secret + `"}`,
		`{"forward": ` + secret + `}`,
		`{"forward": true, "` + secret + `": 1}`,
		`{"forward": true, "reason": {"` + secret + `": 1}}`,
		secret,
		`{"forward": true} ` + secret,
	} {
		_, err := ParseGateAnswer(bad)
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "secret", bad)
		assert.NotContains(t, err.Error(), "1234", bad)
		assert.NotContains(t, err.Error(), "'b'", bad)
	}
	_, err = ParseGateAnswer(`{"forward": "yes"}`)
	assert.EqualError(t, err, `"forward" is not a boolean`)
	_, err = ParseGateAnswer(`{"forward": true, "quote": "hi"}`)
	assert.EqualError(t, err, "the answer has an unknown field")
}
