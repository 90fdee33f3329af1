package activities

import (
	"encoding/json"
	"testing"

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
// and what it accepts says what the text said.
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
		if reason, _ := raw["reason"].(string); reason != got.Reason {
			t.Fatalf("read %q with reason %q", text, got.Reason)
		}
	})
}
