package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A timer's lateness is its fired time less its start and its timeout;
// a timer that has not fired is not counted.
func TestTimersFiredMeasuresEachTimerFromItsOwnStart(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	started := func(id int64, at, timeout time.Duration) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_TIMER_STARTED, EventTime: timestamppb.New(t0.Add(at)),
			Attributes: &historypb.HistoryEvent_TimerStartedEventAttributes{TimerStartedEventAttributes: &historypb.TimerStartedEventAttributes{StartToFireTimeout: durationpb.New(timeout)}}}
	}
	fired := func(id, startedID int64, at time.Duration) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_TIMER_FIRED, EventTime: timestamppb.New(t0.Add(at)),
			Attributes: &historypb.HistoryEvent_TimerFiredEventAttributes{TimerFiredEventAttributes: &historypb.TimerFiredEventAttributes{StartedEventId: startedID}}}
	}
	events := []*historypb.HistoryEvent{
		started(1, 0, 300*time.Millisecond),
		started(2, 100*time.Millisecond, time.Second),
		started(3, 200*time.Millisecond, time.Hour), // never fires
		fired(4, 1, 310*time.Millisecond),
		fired(5, 2, 1150*time.Millisecond),
	}
	assert.Equal(t, []FiredTimer{{Timeout: 300 * time.Millisecond, Late: 10 * time.Millisecond}, {Timeout: time.Second, Late: 50 * time.Millisecond}}, TimersFired(events))
	assert.Equal(t, []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}, TimersLate(events))
}
