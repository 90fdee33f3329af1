package session

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheSessionNamesNoPlatform keeps every platform's rules in its
// adapter: the session works the same for all of them, so none of its
// sources, nor those of the workflows package it shares with the rest,
// names one, in code or in comments.
func TestTheSessionNamesNoPlatform(t *testing.T) {
	platformName := regexp.MustCompile(`(?i)telegram|discord|slack|web ?chat`)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	shared, err := filepath.Glob("../*.go")
	require.NoError(t, err)
	files = append(files, shared...)
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		checked++
		for i, line := range strings.Split(string(src), "\n") {
			if name := platformName.FindString(line); name != "" {
				assert.Failf(t, "a platform is named", "%s:%d names %s: %s", filepath.Join("workflows/session", file), i+1, name, strings.TrimSpace(line))
			}
		}
	}
	assert.Greater(t, checked, 10, "the session's sources were read")
}
