package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// historiesDir holds one folder per release of the session workflow,
// named for its newest change in versions.go ("baseline" is the code
// before the first), each with the histories recorded under that code.
const historiesDir = "testdata/histories"

// TestReplayRecordedHistories replays every history recorded from the
// integration tests (make record-histories) of every release. A change to
// the workflow that would break sessions that are open under an older
// release fails here with a nondeterminism error; such a change needs
// workflow.GetVersion, not a re-recording.
func TestReplayRecordedHistories(t *testing.T) {
	loose, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	require.NoError(t, err)
	require.Empty(t, loose, "a history belongs in the folder of the release that recorded it (%s/<release>/)", historiesDir)
	releases, err := os.ReadDir(historiesDir)
	require.NoError(t, err)
	total := 0
	for _, release := range releases {
		require.True(t, release.IsDir(), "%s: only release folders belong in %s", release.Name(), historiesDir)
		files, err := filepath.Glob(filepath.Join(historiesDir, release.Name(), "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "release %s has no history", release.Name())
		total += len(files)
		for _, file := range files {
			t.Run(release.Name()+"/"+filepath.Base(file), func(t *testing.T) {
				replayer := worker.NewWorkflowReplayer()
				replayer.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
				require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, file))
			})
		}
	}
	// Each release's newest change (versions.go) has its folder, so the
	// histories of the release before an upgrade are always replayed.
	for _, change := range changesInOrder {
		require.DirExists(t, filepath.Join(historiesDir, change), "the release of change %s has no recorded histories: run make record-histories", change)
	}
	t.Logf("%d histories of %d releases replayed", total, len(releases))
}
