package session

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/workflows/internal/replaytest"
)

// historiesDir holds one folder per release of the chat session workflow,
// each with the histories recorded from the integration tests under that
// release's code (make record-histories).
const historiesDir = "testdata/histories"

// TestReplayRecordedHistories replays every recorded history of every
// release that may still be open, each run on its own: a run that began
// as a move from a release since deleted (retire-2026-11) replays here
// without the run before it.
func TestReplayRecordedHistories(t *testing.T) {
	replaytest.ReplayReleases(t, historiesDir, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	})
}
