package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOwnersOnlyKeepsRaisingForOwners(t *testing.T) {
	parse := func(text string) Directives {
		t.Helper()
		p := ParseMessage(text, ParseOptions{})
		require.Empty(t, p.Error, text)
		return p.Directives
	}
	for _, tc := range []struct {
		text   string
		open   []string
		closed []string
	}{
		{text: "/think high", closed: []string{"/think high"}},
		{text: "/think low", closed: []string{"/think low"}},
		{text: "/think off"},
		{text: "/think high", open: []string{MemberThink}},
		{text: "/verbose on", closed: []string{"/verbose on"}},
		{text: "/verbose off"},
		{text: "/verbose on", open: []string{MemberVerbose}},
		{text: "/usage full", closed: []string{"/usage full"}},
		{text: "/usage tokens"},
		{text: "/usage off"},
		{text: "/usage full", open: []string{MemberUsage}},
		{text: "/queue cap:1000 debounce:1m", closed: []string{"/queue debounce:1m0s cap:1000"}},
		{text: "/queue steer"},
		{text: "/queue steer drop:summarize", closed: []string{"/queue drop:summarize"}},
		{text: "/queue cap:1000", open: []string{MemberQueue}},
		{text: "/model openai/gpt-4o"},
		{text: "hello /think high /verbose on /usage full /queue cap:9", open: []string{MemberVerbose},
			closed: []string{"/think high", "/usage full", "/queue cap:9"}},
	} {
		assert.Equal(t, tc.closed, parse(tc.text).OwnersOnly(tc.open), "%q open %v", tc.text, tc.open)
	}
}

func TestParseMemberSettingsNamesTheUnknown(t *testing.T) {
	require.NoError(t, ParseMemberSettings([]string{"think", "verbose", "usage", "queue"}))
	err := ParseMemberSettings([]string{"think", "model"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"model"`)
}
