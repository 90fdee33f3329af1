package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlatformNames(t *testing.T) {
	for flag, want := range map[string][]string{
		"":                  {"telegram", "slack", "discord"},
		"all":               {"telegram", "slack", "discord"},
		"discord":           {"discord"},
		"slack, discord":    {"slack", "discord"},
		"telegram,telegram": {"telegram"},
	} {
		got, err := platformNames(flag)
		require.NoError(t, err, flag)
		assert.Equal(t, want, got, flag)
	}
	for _, flag := range []string{"both", "discord,matrix", "telegram,"} {
		_, err := platformNames(flag)
		assert.Error(t, err, flag)
	}
}
