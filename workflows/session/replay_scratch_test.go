package session

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/internal/replaytest"
)

func TestScratchReplay(t *testing.T) {
	dir := os.Getenv("SCRATCH_REPLAY")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json.gz"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
			r.RegisterWorkflowWithOptions(workflows.SessionWorkflow, workflow.RegisterOptions{Name: workflows.WorkflowName})
			if err := r.ReplayWorkflowHistory(nil, replaytest.ReadHistory(t, f)); err != nil {
				t.Error(err)
			}
		})
	}
}
