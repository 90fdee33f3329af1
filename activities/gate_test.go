package activities

import (
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
