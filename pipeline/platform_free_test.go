package pipeline_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// platformName matches the name of a chat platform replyflow has an
// adapter for.
var platformName = regexp.MustCompile(`(?i)telegram|discord|slack|web ?chat`)

// TestNoPipelinePackageNamesAPlatform keeps the pipeline's rules the
// platforms' common ground: a platform's limits, markup and quirks belong
// to its adapter (adapters.Platform and the interfaces beside it), so
// nothing under pipeline/ but tests names one, in code or in comments.
func TestNoPipelinePackageNamesAPlatform(t *testing.T) {
	var checked int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(src), "\n") {
			if name := platformName.FindString(line); name != "" {
				assert.Failf(t, "a platform is named", "pipeline/%s:%d names %s: %s", path, i+1, name, strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, checked, 10, "the walk found pipeline's sources")
}
