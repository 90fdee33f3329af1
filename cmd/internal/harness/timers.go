package harness

import (
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// TimersLate is, for every timer of a history that fired, how long after
// its due time (started plus its timeout, by the server's clock) the
// server recorded it fired, sorted: how far the server's timer queue
// runs behind.
func TimersLate(events []*historypb.HistoryEvent) []time.Duration {
	due := map[int64]time.Time{}
	var late []time.Duration
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			due[ev.GetEventId()] = ev.GetEventTime().AsTime().Add(ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration())
		case enumspb.EVENT_TYPE_TIMER_FIRED:
			if at, ok := due[ev.GetTimerFiredEventAttributes().GetStartedEventId()]; ok {
				late = append(late, ev.GetEventTime().AsTime().Sub(at))
			}
		}
	}
	slices.Sort(late)
	return late
}
