package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
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
	// counted is, by kind, what each action was: the event that made it
	// billable and what it did (a timer's summary, an activity's type),
	// in history order. It holds one entry an action: as many as the
	// turn's events, which REPLYFLOW_MAX_HISTORY_EVENTS bounds.
	counted map[string][]string
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

// itemized is one line a kind of action, in actionKinds' order: the
// kind with its count, and what each of those actions was.
func (c turnCost) itemized() [][2]string {
	var lines [][2]string
	for _, k := range actionKinds {
		if n := c.actions[k]; n > 0 {
			lines = append(lines, [2]string{fmt.Sprintf("%d %s", n, k), strings.Join(c.counted[k], "; ")})
		}
	}
	return lines
}

// costOf counts events by the rules above.
func costOf(events []*historypb.HistoryEvent) turnCost {
	c := turnCost{events: len(events), actions: map[string]int{}, counted: map[string][]string{}}
	count := func(kind string, n int, ev *historypb.HistoryEvent, what string) {
		c.actions[kind] += n
		c.counted[kind] = append(c.counted[kind], ev.GetEventType().String()+": "+what)
	}
	// activityTypes are the types of the activities scheduled in events,
	// by their scheduled event's ID: at most one an event.
	activityTypes := map[int64]string{}
	localBatch := false // a local activity marker since the last completed task
	for _, ev := range events {
		c.bytes += proto.Size(ev)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			count("workflow start", 1, ev, ev.GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			count("signal", 1, ev, ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName())
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			what := summaryOf(ev)
			if what == "" {
				what = ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration().String()
			}
			count("timer", 1, ev, what)
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, only := fields["TemporalChangeVersion"]; !(only && len(fields) == 1) {
				var set []string
				for _, name := range slices.Sorted(maps.Keys(fields)) {
					set = append(set, name+"="+decoded(fields[name]))
				}
				count("upsert", 1, ev, strings.Join(set, " "))
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			activityTypes[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			started := ev.GetActivityTaskStartedEventAttributes()
			attempts := max(1, int(started.GetAttempt()))
			count("activity", attempts, ev, fmt.Sprintf("%s, %d attempt%s", activityTypes[started.GetScheduledEventId()], attempts, plural(attempts)))
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			localBatch = false
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			switch ev.GetMarkerRecordedEventAttributes().GetMarkerName() {
			case "LocalActivity":
				what := localActivityType(ev)
				if !localBatch {
					count("local activity batch", 1, ev, what)
					localBatch = true
				} else {
					batches := c.counted["local activity batch"]
					batches[len(batches)-1] += ", " + what
				}
			case "SideEffect", "MutableSideEffect":
				count("side effect", 1, ev, ev.GetMarkerRecordedEventAttributes().GetMarkerName())
			}
		}
	}
	return c
}

// summaryOf is the summary the workflow gave an event (a timer's), ""
// when it has none or it is encrypted (-codec-keys).
func summaryOf(ev *historypb.HistoryEvent) string {
	var s string
	if p := ev.GetUserMetadata().GetSummary(); p == nil || converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}

// localActivityType is the type of the local activity a marker recorded,
// "?" when its data is encrypted (-codec-keys).
func localActivityType(ev *historypb.HistoryEvent) string {
	var data struct{ ActivityType string }
	payloads := ev.GetMarkerRecordedEventAttributes().GetDetails()["data"]
	if converter.GetDefaultDataConverter().FromPayloads(payloads, &data) != nil || data.ActivityType == "" {
		return "?"
	}
	return data.ActivityType
}

// decoded is a payload's value as text: search attributes are never
// encrypted.
func decoded(p *commonpb.Payload) string {
	var v any
	if converter.GetDefaultDataConverter().FromPayload(p, &v) != nil {
		return "?"
	}
	return fmt.Sprint(v)
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
