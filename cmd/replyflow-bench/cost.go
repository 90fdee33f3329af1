package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// What a turn costs the Temporal server, counted from the session's
// history by Temporal Cloud's published rules for billable actions
// (docs.temporal.io/cloud/actions):
//
//   - a workflow start (a client start, SignalWithStart's start,
//     continue-as-new): 1;
//   - a signal received: 1;
//   - a timer started: 1;
//   - a search-attribute upsert: 1, except one that only sets
//     TemporalChangeVersion (the SDK's, for workflow.GetVersion: free);
//   - an activity: 1 a attempt (ActivityTaskStarted's attempt);
//   - local activities: 1 for all of those one workflow task completed;
//   - a side effect (or a mutable one that changed): 1;
//   - an activity heartbeat that reached the server: 1 each. Heartbeats
//     are not in history: the dev server's own action metric counts them
//     (serverActions).
//
// Version markers and workflow tasks cost no action. A query or an update
// would (1 each); a turn has none.
type turnCost struct {
	events  int
	bytes   int            // the events' encoded size
	actions map[string]int // by kind, as actionKinds names them
}

// actionKinds are the kinds counted, in the order rows show them.
var actionKinds = []string{"workflow start", "signal", "timer", "upsert", "activity", "local activity batch", "side effect", "heartbeat"}

func (c turnCost) total() int {
	n := 0
	for _, v := range c.actions {
		n += v
	}
	return n
}

// breakdown is "3 activity, 2 timer, …", the kinds in actionKinds' order.
func (c turnCost) breakdown() string {
	var parts []string
	for _, k := range actionKinds {
		if n := c.actions[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// costOf counts events by the rules above.
func costOf(events []*historypb.HistoryEvent) turnCost {
	c := turnCost{events: len(events), actions: map[string]int{}}
	localBatch := false // a local activity marker since the last completed task
	for _, ev := range events {
		c.bytes += proto.Size(ev)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			c.actions["workflow start"]++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			c.actions["signal"]++
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			c.actions["timer"]++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, only := fields["TemporalChangeVersion"]; !(only && len(fields) == 1) {
				c.actions["upsert"]++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			c.actions["activity"] += max(1, int(ev.GetActivityTaskStartedEventAttributes().GetAttempt()))
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			localBatch = false
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			switch ev.GetMarkerRecordedEventAttributes().GetMarkerName() {
			case "LocalActivity":
				if !localBatch {
					c.actions["local activity batch"]++
					localBatch = true
				}
			case "SideEffect", "MutableSideEffect":
				c.actions["side effect"]++
			}
		}
	}
	return c
}

// settledHistory reads a workflow's current run, once no new event has
// appeared for half a second (its timers and clears have run).
func settledHistory(ctx context.Context, c client.Client, id string) ([]*historypb.HistoryEvent, error) {
	var last []*historypb.HistoryEvent
	for {
		var events []*historypb.HistoryEvent
		iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return nil, err
			}
			events = append(events, ev)
		}
		if last != nil && len(events) == len(last) {
			return events, nil
		}
		last = events
		time.Sleep(500 * time.Millisecond)
	}
}

// serverActions reads the Temporal server's own action counter (its
// Prometheus metric "action") for the namespace default, by type.
func serverActions(ctx context.Context, metricsURL string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the server's metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "action{") || !strings.Contains(line, `namespace="default"`) {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		_, kind, _ := strings.Cut(labels, `action_type="`)
		kind, _, _ = strings.Cut(kind, `"`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[kind] += v
		}
	}
	return out, scanner.Err()
}

// heartbeatsBetween is how many activity heartbeats reached the server
// between two readings of serverActions.
func heartbeatsBetween(before, after map[string]float64) int {
	return int(after["grpc_RecordActivityTaskHeartbeat"] - before["grpc_RecordActivityTaskHeartbeat"] +
		after["grpc_RecordActivityTaskHeartbeatById"] - before["grpc_RecordActivityTaskHeartbeatById"])
}
