package retiring

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/workflows/internal/replaytest"
)

// historiesDir holds one folder per release of the retiring session
// workflow, named for its newest change in versions.go ("baseline" is
// the code before the first), each with the histories recorded under
// that code. They go with this workflow's code when it retires.
const historiesDir = "../testdata/histories"

// TestReplayRecordedHistories replays every history recorded from the
// integration tests of every release of this workflow.
func TestReplayRecordedHistories(t *testing.T) {
	replaytest.ReplayReleases(t, historiesDir, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	})
	// Each release's newest change (versions.go) has its folder, so the
	// histories of the release before an upgrade are always replayed.
	for _, change := range changesInOrder {
		require.DirExists(t, filepath.Join(historiesDir, change), "the release of change %s has no recorded histories: run make record-histories", change)
	}
}
