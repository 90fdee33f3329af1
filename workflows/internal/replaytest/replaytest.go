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
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// ReplayReleases replays every history under dir, one folder per
// release, on a replayer that register set up; it returns how many it
// replayed. A history is JSON as recorded: gzip-compressed
// (<path>_run<N>.json.gz), as the recorders write it, or plain (.json),
// as the first releases' histories were recorded and are kept. A change
// to a workflow that would break runs open under a recorded release
// fails here with a nondeterminism error: such a change needs a new
// release, not a re-recording.
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
		plain, err := filepath.Glob(filepath.Join(dir, release.Name(), "*.json"))
		require.NoError(t, err)
		files, err := filepath.Glob(filepath.Join(dir, release.Name(), "*.json.gz"))
		require.NoError(t, err)
		files = append(files, plain...)
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

// ReadHistory reads a recorded history (.json.gz decompressed in memory,
// or .json) and decodes its JSON as the SDK's replayer reads a history
// file.
func ReadHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		require.NoError(t, err, "%s is not gzip-compressed", file)
		data, err = io.ReadAll(zr)
		require.NoError(t, err, "%s: gzip stream", file)
		require.NoError(t, zr.Close(), "%s: gzip stream", file)
	}
	history, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	require.NoError(t, err, "%s: history JSON", file)
	require.NotEmpty(t, history.Events, "%s holds no event", file)
	return history
}
