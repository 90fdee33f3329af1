package workflows

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// historiesDir holds one folder per release of the session workflow,
// named for its newest change in versions.go ("baseline" is the code
// before the first), each with the histories recorded under that code,
// gzip-compressed JSON (<path>_run<N>.json.gz) so that the folder a
// release adds stays small.
const historiesDir = "testdata/histories"

// TestReplayRecordedHistories replays every history recorded from the
// integration tests (make record-histories) of every release. A change to
// the workflow that would break sessions that are open under an older
// release fails here with a nondeterminism error; such a change needs
// workflow.GetVersion, not a re-recording.
func TestReplayRecordedHistories(t *testing.T) {
	for _, pattern := range []string{"*.json", "*.json.gz"} {
		loose, err := filepath.Glob(filepath.Join(historiesDir, pattern))
		require.NoError(t, err)
		require.Empty(t, loose, "a history belongs in the folder of the release that recorded it (%s/<release>/)", historiesDir)
	}
	releases, err := os.ReadDir(historiesDir)
	require.NoError(t, err)
	total := 0
	for _, release := range releases {
		require.True(t, release.IsDir(), "%s: only release folders belong in %s", release.Name(), historiesDir)
		uncompressed, err := filepath.Glob(filepath.Join(historiesDir, release.Name(), "*.json"))
		require.NoError(t, err)
		require.Empty(t, uncompressed, "histories are stored gzip-compressed: gzip -n -9 each of these (its JSON unchanged) and commit the .json.gz instead")
		files, err := filepath.Glob(filepath.Join(historiesDir, release.Name(), "*.json.gz"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "release %s has no history", release.Name())
		total += len(files)
		for _, file := range files {
			t.Run(release.Name()+"/"+filepath.Base(file), func(t *testing.T) {
				history := readHistory(t, file)
				replayer := worker.NewWorkflowReplayer()
				replayer.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
				require.NoError(t, replayer.ReplayWorkflowHistory(nil, history))
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

// readHistory decompresses a recorded history (.json.gz) in memory and
// decodes its JSON as the SDK's replayer reads a history file.
func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	compressed, err := os.ReadFile(file)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	require.NoError(t, err, "%s is not gzip-compressed", file)
	data, err := io.ReadAll(zr)
	require.NoError(t, err, "%s: gzip stream", file)
	require.NoError(t, zr.Close(), "%s: gzip stream", file)
	history, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	require.NoError(t, err, "%s: history JSON", file)
	require.NotEmpty(t, history.Events, "%s holds no event", file)
	return history
}
