package harness

import (
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// FiredTimer is a timer of a history that fired: how long it was set
// for, and how long after its due time (started plus that, by the
// server's clock) the server recorded it fired.
type FiredTimer struct {
	Timeout time.Duration
	Late    time.Duration
}

// TimersFired is every timer of a history that fired, in the order they
// fired.
func TimersFired(events []*historypb.HistoryEvent) []FiredTimer {
	type started struct {
		at      time.Time
		timeout time.Duration
	}
	// At most one entry per TimerStarted event of the history.
	pending := map[int64]started{}
	var fired []FiredTimer
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			timeout := ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration()
			pending[ev.GetEventId()] = started{ev.GetEventTime().AsTime(), timeout}
		case enumspb.EVENT_TYPE_TIMER_FIRED:
			if s, ok := pending[ev.GetTimerFiredEventAttributes().GetStartedEventId()]; ok {
				fired = append(fired, FiredTimer{Timeout: s.timeout, Late: ev.GetEventTime().AsTime().Sub(s.at.Add(s.timeout))})
			}
		}
	}
	return fired
}

// TimersLate is, for every timer of a history that fired, how late it
// fired (FiredTimer.Late), sorted: how far the server's timer queue runs
// behind.
func TimersLate(events []*historypb.HistoryEvent) []time.Duration {
	var late []time.Duration
	for _, t := range TimersFired(events) {
		late = append(late, t.Late)
	}
	slices.Sort(late)
	return late
}
