package session

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/internal/replaytest"
	"github.com/replyflow/replyflow/workflows/retiring"
)

// historiesDir holds one folder per release of the chat session workflow,
// each with the histories recorded from the integration tests under that
// release's code (make record-histories).
const historiesDir = "testdata/histories"

// TestReplayRecordedHistories replays every recorded history of every
// release that may still be open. A history may begin on the retiring
// session workflow and move on into this one (the rolling upgrade's): the
// replayer has both, until the retiring one goes with its code.
func TestReplayRecordedHistories(t *testing.T) {
	replaytest.ReplayReleases(t, historiesDir, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
		r.RegisterWorkflowWithOptions(retiring.SessionWorkflow, workflow.RegisterOptions{Name: workflows.WorkflowName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	})
}
