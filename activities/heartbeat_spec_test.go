package activities

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/pipeline"
)

func mustHeartbeat(t *testing.T, text string) pipeline.HeartbeatSpec {
	t.Helper()
	s, err := pipeline.ParseHeartbeat(text)
	require.NoError(t, err)
	return s
}

// expand lists the clock times calendars match, as the server reads them
// (a range's End below its Start is its Start; a Step of 0 is 1).
func expand(t *testing.T, cals []client.ScheduleCalendarSpec) []pipeline.TimeOfDay {
	t.Helper()
	values := func(rs []client.ScheduleRange) []int {
		var out []int
		for _, r := range rs {
			end, step := max(r.End, r.Start), max(r.Step, 1)
			for v := r.Start; v <= end; v += step {
				out = append(out, v)
			}
		}
		return out
	}
	seen := map[pipeline.TimeOfDay]bool{}
	var out []pipeline.TimeOfDay
	for _, c := range cals {
		require.Equal(t, []int{0}, values(c.Second), "ticks fall on the minute")
		require.Empty(t, c.DayOfMonth, "every day")
		require.Empty(t, c.Month)
		require.Empty(t, c.DayOfWeek)
		for _, h := range values(c.Hour) {
			for _, m := range values(c.Minute) {
				tod := pipeline.TimeOfDay(h*60 + m)
				require.False(t, seen[tod], "calendars overlap at %s", tod)
				seen[tod] = true
				out = append(out, tod)
			}
		}
	}
	return out
}

func TestScheduleSpecOfActiveHours(t *testing.T) {
	cases := []struct {
		text string
		want client.ScheduleSpec
	}{
		{"every 30m 08:00-22:00 Europe/Berlin", client.ScheduleSpec{TimeZoneName: "Europe/Berlin", Calendars: []client.ScheduleCalendarSpec{{
			Second: []client.ScheduleRange{{}}, Minute: []client.ScheduleRange{{Start: 0, End: 30, Step: 30}},
			Hour: []client.ScheduleRange{{Start: 8, End: 21, Step: 1}}, Comment: "every 30m 08:00-22:00 Europe/Berlin",
		}}}},
		{"every 2h 22:00-06:00 Asia/Tokyo", client.ScheduleSpec{TimeZoneName: "Asia/Tokyo", Calendars: []client.ScheduleCalendarSpec{{
			Second: []client.ScheduleRange{{}}, Minute: []client.ScheduleRange{{Start: 0, End: 0, Step: 1}},
			Hour: []client.ScheduleRange{{Start: 0, End: 4, Step: 2}, {Start: 22, End: 22, Step: 1}}, Comment: "every 2h 22:00-06:00 Asia/Tokyo",
		}}}},
		{"every 90m 08:00-14:00", client.ScheduleSpec{Calendars: []client.ScheduleCalendarSpec{{
			Second: []client.ScheduleRange{{}}, Minute: []client.ScheduleRange{{Start: 0, End: 0, Step: 1}},
			Hour: []client.ScheduleRange{{Start: 8, End: 11, Step: 3}}, Comment: "every 1h30m 08:00-14:00",
		}, {
			Second: []client.ScheduleRange{{}}, Minute: []client.ScheduleRange{{Start: 30, End: 30, Step: 1}},
			Hour: []client.ScheduleRange{{Start: 9, End: 12, Step: 3}}, Comment: "every 1h30m 08:00-14:00",
		}}}},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			got, err := ScheduleSpecOf(mustHeartbeat(t, c.text))
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestScheduleCalendarsMatchExactlyTheTicks expands the calendars of
// every interval that divides a day over ranges of each kind (a whole
// day, partial hours, across midnight, wrapping inside one hour) and
// compares them with the clock times the rules say.
func TestScheduleCalendarsMatchExactlyTheTicks(t *testing.T) {
	ranges := []string{"00:00-24:00", "08:00-22:00", "08:10-22:05", "22:00-06:00", "23:50-00:20", "08:30-08:15", "13:07-13:08"}
	n := 0
	for minutes := 5; minutes <= 24*60; minutes++ {
		if 24*60%minutes != 0 {
			continue
		}
		for _, r := range ranges {
			text := fmt.Sprintf("every %s %s Asia/Kolkata", time.Duration(minutes)*time.Minute, r)
			spec := mustHeartbeat(t, text)
			got, err := ScheduleSpecOf(spec)
			require.NoError(t, err, text)
			require.Empty(t, got.Intervals, text)
			assert.Equal(t, "Asia/Kolkata", got.TimeZoneName, text)
			assert.ElementsMatch(t, spec.TimesOfDay(), expand(t, got.Calendars), text)
			assert.LessOrEqual(t, len(got.Calendars), 32, "%s: a handful of calendars, not one per tick", text)
			n++
		}
	}
	assert.Greater(t, n, 100)
}

func TestScheduleSpecOfAllDayIsAnInterval(t *testing.T) {
	got, err := ScheduleSpecOf(mustHeartbeat(t, "every 7h Europe/Berlin"))
	require.NoError(t, err)
	assert.Equal(t, client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 7 * time.Hour}}, TimeZoneName: "Europe/Berlin"}, got)

	_, err = ScheduleSpecOf(pipeline.HeartbeatSpec{Every: pipeline.Duration(time.Hour), ActiveFrom: 60, ActiveTo: 60})
	assert.ErrorContains(t, err, "are empty", "a spec that does not validate builds no schedule")
}

func TestHeartbeatSpecOfReadsBackWhatScheduleSpecOfWrote(t *testing.T) {
	for _, text := range []string{"every 30m 08:00-22:00 Europe/Berlin", "every 45m 22:00-06:00", "every 7h", "every 5m UTC"} {
		spec := mustHeartbeat(t, text)
		sched, err := ScheduleSpecOf(spec)
		require.NoError(t, err)
		back, err := HeartbeatSpecOf(&sched)
		require.NoError(t, err, text)
		assert.Equal(t, spec, back, text)
	}
	fast := pipeline.HeartbeatSpec{Every: pipeline.Duration(2 * time.Second)}
	sched, err := ScheduleSpecOf(fast)
	require.NoError(t, err)
	back, err := HeartbeatSpecOf(&sched)
	require.NoError(t, err)
	assert.Equal(t, fast, back, "a fast schedule (tests) reads back too")

	for _, foreign := range []*client.ScheduleSpec{
		nil,
		{CronExpressions: []string{"0 12 * * *"}},
		{Calendars: []client.ScheduleCalendarSpec{{Comment: "nightly report"}}},
		{Calendars: []client.ScheduleCalendarSpec{{Comment: "every 30m 08:00-22:00 Europe/Berlin"}}, TimeZoneName: "UTC"},
		{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour, Offset: time.Minute}}},
	} {
		_, err := HeartbeatSpecOf(foreign)
		assert.ErrorIs(t, err, errNotAHeartbeatSpec, "%+v", foreign)
	}
}

func TestCheckTimeZoneExists(t *testing.T) {
	require.NoError(t, checkTimeZoneExists(""))
	require.NoError(t, checkTimeZoneExists("Europe/Berlin"))
	assert.ErrorContains(t, checkTimeZoneExists("Europe/Atlantis"), `unknown time zone "Europe/Atlantis"`)
}
