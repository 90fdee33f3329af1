package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildRevRefusesWhatIsNotACommitBeforeBuilding(t *testing.T) {
	dir := t.TempDir()
	for _, rev := range []string{"no-such-revision-anywhere", "HEAD^{tree}", "-o /tmp/x"} {
		_, err := BuildRev(dir, "replyflow-before", rev)
		require.Error(t, err, rev)
		assert.Contains(t, err.Error(), "not a commit of this repository", rev)
	}
}
