package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// TurnCost is what a turn costs the Temporal server, counted from the
// session's history by Temporal Cloud's published rules for billable
// actions (docs.temporal.io/cloud/actions):
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
//     are not in history: CostOf never counts them; a caller that reads
//     the server's own action metric adds them under "heartbeat".
//
// Version markers and workflow tasks cost no action. A query or an update
// would (1 each); a turn has none.
type TurnCost struct {
	Events  int
	Bytes   int            // the events' encoded size
	Actions map[string]int // by kind, as ActionKinds names them
	// Counted is, by kind, what each action was: the event that made it
	// billable and what it did (a timer's summary, an activity's type),
	// in history order. It holds one entry an action: as many as the
	// turn's events, which REPLYFLOW_MAX_HISTORY_EVENTS bounds.
	Counted map[string][]string
}

// ActionKinds are the kinds counted, in the order reports show them.
var ActionKinds = []string{"workflow start", "signal", "timer", "upsert", "activity", "local activity batch", "side effect", "heartbeat"}

// Total is the turn's billable actions, all kinds together.
func (c TurnCost) Total() int {
	n := 0
	for _, v := range c.Actions {
		n += v
	}
	return n
}

// Breakdown is "3 activity, 2 timer, …", the kinds in ActionKinds' order.
func (c TurnCost) Breakdown() string {
	var parts []string
	for _, k := range ActionKinds {
		if n := c.Actions[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// Itemized is one line a kind of action, in ActionKinds' order: the
// kind with its count, and what each of those actions was.
func (c TurnCost) Itemized() [][2]string {
	var lines [][2]string
	for _, k := range ActionKinds {
		if n := c.Actions[k]; n > 0 {
			lines = append(lines, [2]string{fmt.Sprintf("%d %s", n, k), strings.Join(c.Counted[k], "; ")})
		}
	}
	return lines
}

// String is the cost in full, for a failure message: the totals, then
// one line a kind of action with what each was.
func (c TurnCost) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d billable actions (%s), %d history events, %d bytes", c.Total(), c.Breakdown(), c.Events, c.Bytes)
	for _, line := range c.Itemized() {
		fmt.Fprintf(&b, "\n  %s: %s", line[0], line[1])
	}
	return b.String()
}

// CostOf counts events by TurnCost's rules.
func CostOf(events []*historypb.HistoryEvent) TurnCost {
	c := TurnCost{Events: len(events), Actions: map[string]int{}, Counted: map[string][]string{}}
	count := func(kind string, n int, ev *historypb.HistoryEvent, what string) {
		c.Actions[kind] += n
		c.Counted[kind] = append(c.Counted[kind], ev.GetEventType().String()+": "+what)
	}
	// activityTypes are the types of the activities scheduled in events,
	// by their scheduled event's ID: at most one an event.
	activityTypes := map[int64]string{}
	localBatch := false // a local activity marker since the last completed task
	for _, ev := range events {
		c.Bytes += proto.Size(ev)
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
			s := "s"
			if attempts == 1 {
				s = ""
			}
			count("activity", attempts, ev, fmt.Sprintf("%s, %d attempt%s", activityTypes[started.GetScheduledEventId()], attempts, s))
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
					batches := c.Counted["local activity batch"]
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
// when it has none or it is encrypted (a codec's keys).
func summaryOf(ev *historypb.HistoryEvent) string {
	var s string
	if p := ev.GetUserMetadata().GetSummary(); p == nil || converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}

// localActivityType is the type of the local activity a marker recorded,
// "?" when its data is encrypted (a codec's keys).
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
