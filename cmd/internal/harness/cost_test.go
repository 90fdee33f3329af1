package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/durationpb"
)

func payload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

func localActivityMarker(t *testing.T, activityType string) *historypb.HistoryEvent {
	data := struct{ ActivityType string }{activityType}
	return &historypb.HistoryEvent{
		EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
		Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "LocalActivity",
			Details:    map[string]*commonpb.Payloads{"data": {Payloads: []*commonpb.Payload{payload(t, data)}}},
		}},
	}
}

func taskCompleted() *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED}
}

// A turn's billable actions are counted and itemized by kind: the event
// that counted and what it was; local activities of one workflow task are
// one action, a version-only upsert none.
func TestCostOfItemizesTheBillableActions(t *testing.T) {
	events := []*historypb.HistoryEvent{
		{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, Attributes: &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{
			WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{SignalName: "inbound"}}},
		taskCompleted(),
		localActivityMarker(t, "SetReaction"),
		{EventType: enumspb.EVENT_TYPE_TIMER_STARTED,
			UserMetadata: &sdkpb.UserMetadata{Summary: payload(t, "debounce 1s")},
			Attributes: &historypb.HistoryEvent_TimerStartedEventAttributes{TimerStartedEventAttributes: &historypb.TimerStartedEventAttributes{
				StartToFireTimeout: durationpb.New(time.Second)}}},
		{EventType: enumspb.EVENT_TYPE_TIMER_STARTED, Attributes: &historypb.HistoryEvent_TimerStartedEventAttributes{
			TimerStartedEventAttributes: &historypb.TimerStartedEventAttributes{StartToFireTimeout: durationpb.New(time.Minute)}}},
		{EventType: enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, Attributes: &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{
			UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{SearchAttributes: &commonpb.SearchAttributes{
				IndexedFields: map[string]*commonpb.Payload{"TemporalChangeVersion": payload(t, []string{"change-1"})}}}}},
		{EventType: enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, Attributes: &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{
			UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{SearchAttributes: &commonpb.SearchAttributes{
				IndexedFields: map[string]*commonpb.Payload{"ReplyflowState": payload(t, "thinking")}}}}},
		taskCompleted(),
		{EventId: 20, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
			ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{ActivityType: &commonpb.ActivityType{Name: "AgentTurn"}}}},
		{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{
			ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: 20, Attempt: 2}}},
		taskCompleted(),
		localActivityMarker(t, "Deliver"),
		localActivityMarker(t, "SetReaction"),
	}

	cost := CostOf(events)

	assert.Equal(t, len(events), cost.Events)
	assert.Equal(t, 8, cost.Total())
	assert.Equal(t, [][2]string{
		{"1 signal", "WorkflowExecutionSignaled: inbound"},
		{"2 timer", "TimerStarted: debounce 1s; TimerStarted: 1m0s"},
		{"1 upsert", "UpsertWorkflowSearchAttributes: ReplyflowState=thinking"},
		{"2 activity", "ActivityTaskStarted: AgentTurn, 2 attempts"},
		{"2 local activity batch", "MarkerRecorded: SetReaction; MarkerRecorded: Deliver, SetReaction"},
	}, cost.Itemized())
}
