// Package reload makes open sessions read their settings again (the
// session workflow's reload signal): one session, every open session of a
// task queue at a bounded rate, and, when a worker starts with settings
// that differ from those its task queue last applied, every open session
// of that task queue.
//
// A session reads its settings (the worker's configuration and its store
// entry) when a run starts; without a reload, an open chat keeps the
// settings of the worker that started its run until it continues as new.
// A reload is idempotent: a session told twice reads the same settings
// twice, so two workers that start with the same new configuration and
// both signal every session do no harm beyond the signals themselves.
package reload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/time/rate"

	"github.com/replyflow/replyflow/workflows"
)

// DefaultRate is how many sessions a second are told to reload unless
// Sessions.Rate says otherwise: each reload is a signal (a billable action
// on Temporal Cloud), a workflow task and two store reads, so 10,000 open
// sessions take between three and four minutes, and neither Temporal nor
// the store sees a burst.
const DefaultRate = 50

// pageSize is how many sessions one visibility page lists: the only
// sessions held in memory at a time.
const pageSize = 500

// Temporal is the part of the Temporal client a reload needs.
type Temporal interface {
	ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Sessions tells the sessions of one task queue to reload their settings.
type Sessions struct {
	Client    Temporal
	TaskQueue string
	// Rate is the most sessions signalled a second; 0 is DefaultRate.
	Rate float64
}

// Count is what a reload of every open session did.
type Count struct {
	// Signalled sessions read their settings again before their next
	// message.
	Signalled int
	// Closed sessions were listed as open but had completed (or
	// continued as new) before their signal: each loads its settings
	// when its next run starts.
	Closed int
}

// OpenQuery is the visibility query of the task queue's open sessions.
func OpenQuery(taskQueue string) string {
	return fmt.Sprintf(`%s AND ExecutionStatus = "Running" AND TaskQueue = %q`, workflows.SessionTypesQuery(), taskQueue)
}

// One tells one session (its workflow ID) to reload.
func (s Sessions) One(ctx context.Context, id string, req workflows.ReloadRequest) error {
	err := s.Client.SignalWorkflow(ctx, id, "", workflows.SignalReload, req)
	if isNotFound(err) {
		return fmt.Errorf("%s is not running, so there is nothing to reload (a session reads its settings when its next message starts it again; `replyflow sessions` lists the open ones): %w", id, err)
	}
	if err != nil {
		return fmt.Errorf("signal reload to %s (is Temporal reachable? `replyflow status` checks): %w", id, err)
	}
	return nil
}

// All tells every open session of the task queue to reload, at most Rate
// a second, page by page. A session that closed since it was listed is
// counted, not an error; any other failure stops the pass with what was
// done so far.
func (s Sessions) All(ctx context.Context, req workflows.ReloadRequest) (Count, error) {
	return s.all(ctx, req, s.limiter())
}

// perSecond is the rate in force.
func (s Sessions) perSecond() float64 {
	if s.Rate <= 0 {
		return DefaultRate
	}
	return s.Rate
}

func (s Sessions) limiter() *rate.Limiter { return rate.NewLimiter(rate.Limit(s.perSecond()), 1) }

// waiter paces the signals (a rate.Limiter).
type waiter interface{ Wait(context.Context) error }

func (s Sessions) all(ctx context.Context, req workflows.ReloadRequest, pace waiter) (Count, error) {
	var n Count
	query := OpenQuery(s.TaskQueue)
	var token []byte
	for {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: pageSize, NextPageToken: token})
		if err != nil {
			return n, fmt.Errorf("list the open sessions of task queue %s with %q (are replyflow's search attributes registered? see deploy/README.md): %w", s.TaskQueue, query, err)
		}
		for _, e := range resp.GetExecutions() {
			if err := pace.Wait(ctx); err != nil {
				return n, fmt.Errorf("reload the open sessions of task queue %s: stopped after %d: %w", s.TaskQueue, n.Signalled, err)
			}
			id := e.GetExecution().GetWorkflowId()
			err := s.Client.SignalWorkflow(ctx, id, "", workflows.SignalReload, req)
			switch {
			case isNotFound(err):
				n.Closed++
			case err != nil:
				return n, fmt.Errorf("signal reload to %s (stopped after %d sessions of task queue %s): %w", id, n.Signalled, s.TaskQueue, err)
			default:
				n.Signalled++
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return n, nil
		}
	}
}

// isNotFound is true for a signal to a workflow that is not running.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// Fingerprint digests settings (a value encoding/json renders the same
// way every time: structs, sorted maps) as "sha256:<hex>": equal settings
// give equal fingerprints, and the fingerprint shows none of them, so it
// may be stored and logged.
func Fingerprint(settings any) (string, error) {
	data, err := json.Marshal(settings)
	if err != nil {
		return "", fmt.Errorf("fingerprint the session settings: %w", err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
