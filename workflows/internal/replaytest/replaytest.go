// Package replaytest replays the recorded histories of a session
// workflow's releases (make record-histories), for the replay tests of
// the workflow packages. It touches nothing but the files it reads.
package replaytest

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
)

// ReplayReleases replays every history under dir, one folder per
// release, each history gzip-compressed JSON (<path>_run<N>.json.gz), on
// a replayer that register set up; it returns how many it replayed. A
// change to a workflow that would break runs open under a recorded
// release fails here with a nondeterminism error: such a change needs a
// new release, not a re-recording.
func ReplayReleases(t *testing.T, dir string, register func(worker.WorkflowReplayer)) int {
	t.Helper()
	for _, pattern := range []string{"*.json", "*.json.gz"} {
		loose, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		require.Empty(t, loose, "a history belongs in the folder of the release that recorded it (%s/<release>/)", dir)
	}
	releases, err := os.ReadDir(dir)
	require.NoError(t, err)
	total := 0
	for _, release := range releases {
		require.True(t, release.IsDir(), "%s: only release folders belong in %s", release.Name(), dir)
		uncompressed, err := filepath.Glob(filepath.Join(dir, release.Name(), "*.json"))
		require.NoError(t, err)
		require.Empty(t, uncompressed, "histories are stored gzip-compressed: gzip -n -9 each of these (its JSON unchanged) and commit the .json.gz instead")
		files, err := filepath.Glob(filepath.Join(dir, release.Name(), "*.json.gz"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "release %s has no history", release.Name())
		total += len(files)
		for _, file := range files {
			t.Run(release.Name()+"/"+filepath.Base(file), func(t *testing.T) {
				history := ReadHistory(t, file)
				replayer := worker.NewWorkflowReplayer()
				register(replayer)
				require.NoError(t, replayer.ReplayWorkflowHistory(nil, history))
			})
		}
	}
	t.Logf("%d histories of %d releases replayed", total, len(releases))
	return total
}

// ReadHistory decompresses a recorded history (.json.gz) in memory and
// decodes its JSON as the SDK's replayer reads a history file.
func ReadHistory(t *testing.T, file string) *historypb.History {
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
