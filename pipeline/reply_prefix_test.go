package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRenderReplyPrefix(t *testing.T) {
	vars := map[string]string{"model": "openai/gpt-4o", "think": "high", "empty": "", "nl": "a\nb\tc"}
	cases := []struct{ template, want string }{
		{"", ""},
		{"[{model}] ", "[openai/gpt-4o] "},
		{"{model} · {think}: ", "openai/gpt-4o · high: "},
		{"[{unknown}] ", "[{unknown}] "},
		{"{Model}", "{Model}"},
		{"{empty}x", "x"},
		{"{nl}", "a b c"},
		{"{{model}}", "{openai/gpt-4o}"},
		{"{ {model}", "{ openai/gpt-4o"},
		{"{model", "{model"},
		{"}{", "}{"},
		{"{}", "{}"},
		{"{think}{think}", "highhigh"},
	}
	for _, c := range cases {
		t.Run(c.template, func(t *testing.T) {
			assert.Equal(t, c.want, RenderReplyPrefix(c.template, vars))
		})
	}
	assert.Equal(t, "{model}", RenderReplyPrefix("{x}", map[string]string{"x": "{model}", "model": "m"}), "a value is not read again")
}

func TestRenderReplyPrefixIsBounded(t *testing.T) {
	long := RenderReplyPrefix("[{v}{v}] ", map[string]string{"v": strings.Repeat("é", 1000)})
	assert.Len(t, long, MaxReplyPrefixBytes)
	assert.True(t, strings.HasPrefix(long, "[éé") && strings.HasSuffix(long, "…"), long)
	assert.Len(t, RenderReplyPrefix(strings.Repeat("{", 10000), nil), MaxReplyPrefixBytes)
}
