package harness

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

// RecordHistory saves every run of a workflow's history as
// dir/<name>_run<N>.json.gz (run 1 the first), gzip-compressed JSON, for
// the replay test (workflows/session/testdata/histories/<release>/). A history
// already recorded under that name is kept as it is, and says so
// (recorded false): it guards sessions that ran the workflow code of its
// time, so it is never recorded again.
func RecordHistory(ctx context.Context, c client.Client, workflowID, dir, name string) (recorded bool, err error) {
	if old, _ := filepath.Glob(filepath.Join(dir, name+"_run*.json*")); len(old) > 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A history is recorded between workflow tasks, so that what the last
	// task did (a local activity's marker) is in it; a run that has just
	// continued as new has nothing to replay until its first task ended.
	for {
		d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
		if err == nil && d.PendingWorkflowTask == nil && d.WorkflowExecutionInfo.HistoryLength >= 3 {
			break
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("workflow %s did not finish its workflow task: %v", workflowID, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	runs, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", workflowID)})
	if err != nil {
		return false, err
	}
	if len(runs.Executions) == 0 {
		return false, fmt.Errorf("workflow %s has no run", workflowID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	for i, run := range runs.Executions {
		history := &historypb.History{}
		iter := c.GetWorkflowHistory(ctx, workflowID, run.Execution.RunId, false, 0)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return false, err
			}
			history.Events = append(history.Events, ev)
		}
		data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(history)
		if err != nil {
			return false, err
		}
		data, err = gzipped(data)
		if err != nil {
			return false, err
		}
		file := filepath.Join(dir, fmt.Sprintf("%s_run%d.json.gz", name, len(runs.Executions)-i))
		// O_EXCL: even a file that appeared since the check is not overwritten.
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return false, err
		}
		_, err = f.Write(data)
		if err := errors.Join(err, f.Close()); err != nil {
			return false, fmt.Errorf("history %s: %w", file, err)
		}
	}
	return true, nil
}

// gzipped compresses data with a header that carries no name and no
// modification time, so the same history always gives the same bytes.
func gzipped(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
