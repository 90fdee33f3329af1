package mrkdwn

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportsOnlyWhatAWorkflowMay: this package is a pure rule, which
// a workflow could call: it stays free of I/O and of the Slack SDK, the
// standard library and pipeline only.
func TestImportsOnlyWhatAWorkflowMay(t *testing.T) {
	sources, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var checked int
	for _, path := range sources {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		checked++
		for _, spec := range f.Imports {
			imported, err := strconv.Unquote(spec.Path.Value)
			require.NoError(t, err)
			standard := !strings.Contains(strings.Split(imported, "/")[0], ".")
			pipeline := imported == "github.com/replyflow/replyflow/pipeline" || strings.HasPrefix(imported, "github.com/replyflow/replyflow/pipeline/")
			assert.True(t, standard || pipeline, "%s imports %s", path, imported)
		}
	}
	assert.Positive(t, checked)
}
