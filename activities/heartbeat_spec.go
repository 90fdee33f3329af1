package activities

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/pipeline"
)

// ScheduleSpecOf is when a heartbeat schedule acts.
//
// All day, it is an interval (Intervals{Every}): an exact cadence that no
// clock change moves. With active hours it is calendars in the spec's
// time zone (TimeZoneName), one tick at each pipeline.HeartbeatSpec
// TimesOfDay clock time, so the ticks are counted from the start of the
// range and fall at the same local times every day. An interval with
// Skip calendars for the hours outside would tick at times counted from
// 1970 in UTC: "every 24h 08:00-22:00" would land at 00:00 UTC, outside
// the range in Europe, and never tick.
//
// Calendars match the local clock literally (the SDK's TimeZoneName
// note): on the night clocks go forward a tick in the missing hour is
// skipped, and one in the repeated hour runs twice.
func ScheduleSpecOf(s pipeline.HeartbeatSpec) (client.ScheduleSpec, error) {
	if err := s.Validate(); err != nil {
		return client.ScheduleSpec{}, err
	}
	if s.AllDay() {
		return client.ScheduleSpec{
			Intervals:    []client.ScheduleIntervalSpec{{Every: s.Every.D()}},
			TimeZoneName: s.TimeZone,
		}, nil
	}
	return client.ScheduleSpec{Calendars: calendarsOf(s), TimeZoneName: s.TimeZone}, nil
}

// calendarsOf groups the spec's clock times by hour; hours whose minutes
// are the same share one calendar. Each carries the spec's text as its
// comment: the server keeps it, and it is how HeartbeatSpecOf reads the
// spec back.
func calendarsOf(s pipeline.HeartbeatSpec) []client.ScheduleCalendarSpec {
	var minutes [24][]int
	for _, t := range s.TimesOfDay() {
		minutes[t/60] = append(minutes[t/60], int(t%60))
	}
	type group struct {
		minutes []client.ScheduleRange
		hours   []int
	}
	var groups []group
	for hour, ms := range minutes {
		if len(ms) == 0 {
			continue
		}
		ranges := progressions(ms)
		i := slices.IndexFunc(groups, func(g group) bool { return slices.Equal(g.minutes, ranges) })
		if i < 0 {
			groups = append(groups, group{minutes: ranges})
			i = len(groups) - 1
		}
		groups[i].hours = append(groups[i].hours, hour)
	}
	out := make([]client.ScheduleCalendarSpec, 0, len(groups))
	for _, g := range groups {
		out = append(out, client.ScheduleCalendarSpec{
			Second:  []client.ScheduleRange{{Start: 0}},
			Minute:  g.minutes,
			Hour:    progressions(g.hours),
			Comment: s.String(),
		})
	}
	return out
}

// progressions writes sorted values as ranges with a step, each as long
// as its values keep one distance: 8 11 14 20 is 8-14/3 and 20.
func progressions(values []int) []client.ScheduleRange {
	var out []client.ScheduleRange
	for i := 0; i < len(values); {
		r := client.ScheduleRange{Start: values[i], End: values[i], Step: 1}
		j := i + 1
		if j < len(values) {
			r.Step = values[j] - values[i]
			for j < len(values) && values[j]-values[j-1] == r.Step {
				r.End = values[j]
				j++
			}
		}
		out = append(out, r)
		i = j
	}
	return out
}

// errNotAHeartbeatSpec: a schedule that replyflow did not write (edited
// in the Temporal UI, say).
var errNotAHeartbeatSpec = errors.New("the schedule's spec is not one replyflow wrote")

// HeartbeatSpecOf reads the heartbeat spec back from a schedule's spec
// (ScheduleSpecOf's inverse): from the calendars' comment, or from the
// interval.
func HeartbeatSpecOf(spec *client.ScheduleSpec) (pipeline.HeartbeatSpec, error) {
	switch {
	case spec == nil:
		return pipeline.HeartbeatSpec{}, errNotAHeartbeatSpec
	case len(spec.Calendars) > 0:
		s, err := pipeline.ReadHeartbeatSpec(spec.Calendars[0].Comment)
		if err != nil || s.AllDay() || s.TimeZone != spec.TimeZoneName {
			return pipeline.HeartbeatSpec{}, fmt.Errorf("%w: calendar comment %q", errNotAHeartbeatSpec, spec.Calendars[0].Comment)
		}
		return s, nil
	case len(spec.Intervals) == 1 && spec.Intervals[0].Offset == 0:
		s := pipeline.HeartbeatSpec{Every: pipeline.Duration(spec.Intervals[0].Every), TimeZone: spec.TimeZoneName}
		return s, s.Validate()
	}
	return pipeline.HeartbeatSpec{}, errNotAHeartbeatSpec
}

// checkTimeZoneExists loads the zone, from the database embedded in the
// binary when the host has none (cmd/replyflow imports time/tzdata), so
// a misspelt zone is refused when it is set and not at the first tick.
func checkTimeZoneExists(name string) error {
	if name == "" {
		return nil
	}
	if _, err := time.LoadLocation(name); err != nil {
		return fmt.Errorf("unknown time zone %q; use an IANA name like Europe/Berlin or UTC", name)
	}
	return nil
}
