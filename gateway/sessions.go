package gateway

import (
	"context"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// Sessions lists running sessions through Temporal visibility: the
// gateway's adapters.SessionLister, which a platform that does not
// redeliver (Discord) asks after a reconnect, to fetch what the sessions
// missed from the platform's history.
type Sessions struct {
	Client client.Client
}

var (
	_ adapters.SessionLister       = (*Sessions)(nil)
	_ adapters.ClosedSessionLister = (*Sessions)(nil)
)

// MaxOpenSessions bounds one listing: past it the rest are left out (and
// the caller logs how many it got), so a huge namespace cannot hold the
// gateway in one call for ever.
const MaxOpenSessions = 10_000

// OpenSessionsQuery finds the running sessions of a channel by their
// workflow ID, which SignalWithStart gives them at once, and not by the
// ReplyflowChannel attribute, which only a worker's first task sets: a
// session no worker ran yet (its worker was down with the gateway) must
// be found too.
func OpenSessionsQuery(channel string) string {
	return fmt.Sprintf("%s AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH %q",
		workflows.SessionTypesQuery(), pipeline.WorkflowIDPrefix+channel+":")
}

// OpenSessions lists the running sessions of channel, with when each last
// took a message (ReplyflowLastInboundAt, zero when no worker ran it) and
// when it started.
func (s *Sessions) OpenSessions(ctx context.Context, channel string) ([]adapters.OpenSession, error) {
	return s.list(ctx, channel, OpenSessionsQuery(channel))
}

// ClosedSessionsQuery finds the runs of a channel's sessions that closed
// after since (completed idle, continued as new, or ended otherwise), by
// their workflow ID as OpenSessionsQuery does.
func ClosedSessionsQuery(channel string, since time.Time) string {
	return fmt.Sprintf("%s AND ExecutionStatus != 'Running' AND CloseTime > %q AND WorkflowId STARTS_WITH %q",
		workflows.SessionTypesQuery(), since.UTC().Format(time.RFC3339Nano), pipeline.WorkflowIDPrefix+channel+":")
}

// ClosedSessions lists the runs of channel's sessions that closed after
// since, as long as the namespace's retention keeps them: when each last
// took a message, when it started and closed.
func (s *Sessions) ClosedSessions(ctx context.Context, channel string, since time.Time) ([]adapters.OpenSession, error) {
	return s.list(ctx, channel, ClosedSessionsQuery(channel, since))
}

// list is the sessions' runs query finds, at most MaxOpenSessions.
func (s *Sessions) list(ctx context.Context, channel, query string) ([]adapters.OpenSession, error) {
	var out []adapters.OpenSession
	var token []byte
	for {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return out, fmt.Errorf("list %s sessions with %q: %w", channel, query, err)
		}
		for _, e := range resp.Executions {
			key, ok := pipeline.ParseWorkflowID(e.GetExecution().GetWorkflowId())
			if !ok || key.Channel != channel {
				continue
			}
			open := adapters.OpenSession{Key: key, StartedAt: e.GetStartTime().AsTime()}
			open.LastInboundAt = attrTime(e.GetSearchAttributes(), workflows.AttrLastInboundAt.GetName())
			if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && e.GetCloseTime() != nil {
				open.ClosedAt = e.GetCloseTime().AsTime()
			}
			out = append(out, open)
			if len(out) == MaxOpenSessions {
				return out, nil
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return out, nil
		}
	}
}

// attrTime reads a Datetime search attribute; zero when it is absent or
// unreadable.
func attrTime(attrs *commonpb.SearchAttributes, name string) time.Time {
	p, ok := attrs.GetIndexedFields()[name]
	if !ok {
		return time.Time{}
	}
	var t time.Time
	if err := converter.GetDefaultDataConverter().FromPayload(p, &t); err != nil {
		return time.Time{}
	}
	return t
}
