package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEListsEveryVariable keeps the README's configuration table, the
// users' reference, in step with Config.
func TestREADMEListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := "REPLYFLOW_" + f.Tag.Get("envconfig")
		row := "| `" + name + "` | "
		idx := strings.Index(string(readme), row)
		if !assert.GreaterOrEqual(t, idx, 0, "README has no row for %s", name) {
			continue
		}
		if def := f.Tag.Get("default"); def != "" {
			rest := string(readme[idx+len(row):])
			line, _, _ := strings.Cut(rest, "\n")
			assert.True(t, strings.HasPrefix(line, "`"+def+"`"), "README's default for %s is not %q: %s", name, def, line)
		}
	}
}

func TestConfigValidationNamesTheVariable(t *testing.T) {
	cfg := testConfig(t)
	cfg.ReactionClearDelay = 11 * time.Minute
	cfg.LogFormat = "xml"
	err := cfg.validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REPLYFLOW_REACTION_CLEAR_DELAY must be between 0 and 10m")
	assert.Contains(t, err.Error(), "REPLYFLOW_LOG_FORMAT")
}
