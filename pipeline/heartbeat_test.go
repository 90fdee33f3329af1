package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func clock(h, m int) TimeOfDay { return TimeOfDay(h*60 + m) }

func TestParseHeartbeat(t *testing.T) {
	berlin := HeartbeatSpec{Every: Duration(30 * time.Minute), ActiveFrom: clock(8, 0), ActiveTo: clock(22, 0), TimeZone: "Europe/Berlin"}
	cases := []struct {
		text string
		want HeartbeatSpec
		err  string
	}{
		{text: "every 30m 08:00-22:00 Europe/Berlin", want: berlin},
		{text: "  EVERY 30M   Europe/Berlin 8:00-22:00 ", want: berlin},
		{text: "every 30m", want: HeartbeatSpec{Every: Duration(30 * time.Minute)}},
		{text: "2h", want: HeartbeatSpec{Every: Duration(2 * time.Hour)}},
		{text: "every 1h30m UTC", want: HeartbeatSpec{Every: Duration(90 * time.Minute), TimeZone: "UTC"}},
		{text: "every 45m 22:00-06:00 Asia/Kolkata", want: HeartbeatSpec{Every: Duration(45 * time.Minute), ActiveFrom: clock(22, 0), ActiveTo: clock(6, 0), TimeZone: "Asia/Kolkata"}},
		{text: "every 24h 08:30-24:00", want: HeartbeatSpec{Every: Duration(24 * time.Hour), ActiveFrom: clock(8, 30), ActiveTo: MinutesPerDay}},
		{text: "every 7h", want: HeartbeatSpec{Every: Duration(7 * time.Hour)}},
		{text: "every 5m America/Argentina/Buenos_Aires", want: HeartbeatSpec{Every: Duration(5 * time.Minute), TimeZone: "America/Argentina/Buenos_Aires"}},

		{text: "", err: "say how often"},
		{text: "every", err: "say how often"},
		{text: "every often", err: `"often" is not an interval`},
		{text: "every 4m", err: "every must be from 5m to 24h, got 4m"},
		{text: "every 25h", err: "every must be from 5m to 24h, got 25h"},
		{text: "every 5m30s", err: "every must be whole minutes, got 5m30s"},
		{text: "every 7h 08:00-22:00", err: "with active hours, every must divide a day"},
		{text: "every 50m 08:00-22:00", err: "50m does not"},
		{text: "every 30m 08:00-08:00", err: `active hours "08:00-08:00" are empty`},
		{text: "every 30m 00:00-00:00", err: "are empty"},
		{text: "every 30m 08:00", err: `"08:00" is not a range of hours`},
		{text: "every 30m 8-22", err: `active hours "8-22": "8" is not a clock time`},
		{text: "every 30m 25:00-26:00", err: `"25:00" is not a clock time`},
		{text: "every 30m 08:60-22:00", err: `"08:60" is not a clock time`},
		{text: "every 30m 24:00-06:00", err: `"24:00" is not a clock time`},
		{text: "every 30m 08:00-24:30", err: `"24:30" is not a clock time`},
		{text: "every 30m +8:00-22:00", err: `"+8:00" is not a clock time`},
		{text: "every 30m 08:0-22:00", err: `"08:0" is not a clock time`},
		{text: "every 30m 08:00-22:00 09:00-10:00", err: `"09:00-10:00" is one word too many`},
		{text: "every 30m Europe/Berlin UTC", err: `"UTC" is one word too many`},
		{text: "every 30m Europe/Berlin;rm", err: `"Europe/Berlin;rm" is not a time zone name`},
		{text: "every 30m _Berlin", err: `"_Berlin" is not a time zone name`},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			got, err := ParseHeartbeat(c.text)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			again, err := ParseHeartbeat(got.String())
			require.NoError(t, err, "the canonical text %q parses", got.String())
			assert.Equal(t, got, again, "String reads back as the same spec")
		})
	}
}

func TestHeartbeatSpecString(t *testing.T) {
	assert.Equal(t, "every 30m 08:00-22:00 Europe/Berlin",
		HeartbeatSpec{Every: Duration(30 * time.Minute), ActiveFrom: clock(8, 0), ActiveTo: clock(22, 0), TimeZone: "Europe/Berlin"}.String())
	assert.Equal(t, "every 1h30m", HeartbeatSpec{Every: Duration(90 * time.Minute)}.String())
	assert.Equal(t, "every 2h 22:00-06:00", HeartbeatSpec{Every: Duration(2 * time.Hour), ActiveFrom: clock(22, 0), ActiveTo: clock(6, 0)}.String())
	assert.Equal(t, "every 2s", HeartbeatSpec{Every: Duration(2 * time.Second)}.String(), "short intervals (tests) print as they are")
}

func TestReadHeartbeatSpecKeepsOnlyTheStructuralRules(t *testing.T) {
	spec, err := ReadHeartbeatSpec("every 2s")
	require.NoError(t, err)
	assert.Equal(t, HeartbeatSpec{Every: Duration(2 * time.Second)}, spec)
	_, err = ParseHeartbeat("every 2s")
	assert.ErrorContains(t, err, "every must be from 5m to 24h", "a chat may not ask for it")
	_, err = ReadHeartbeatSpec("every 2m 08:00-08:00")
	assert.ErrorContains(t, err, "are empty")
	_, err = ReadHeartbeatSpec("every 25h")
	assert.ErrorContains(t, err, "every must be from 1s to 24h")
}

func TestHeartbeatSpecValidateAllowsShortIntervalsOnlyAllDay(t *testing.T) {
	require.NoError(t, HeartbeatSpec{Every: Duration(2 * time.Second)}.Validate(), "a schedule may tick fast; only chats are held to 5m")
	assert.ErrorContains(t, HeartbeatSpec{Every: Duration(500 * time.Millisecond)}.Validate(), "every must be from 1s to 24h")
	assert.ErrorContains(t, HeartbeatSpec{Every: Duration(2 * time.Second), ActiveFrom: clock(8, 0), ActiveTo: clock(9, 0)}.Validate(), "must divide a day")
	assert.ErrorContains(t, HeartbeatSpec{Every: Duration(time.Hour), ActiveFrom: clock(8, 0), ActiveTo: clock(25, 0)}.Validate(), "not clock times")
}

func TestHeartbeatTimesOfDay(t *testing.T) {
	cases := []struct {
		name string
		spec HeartbeatSpec
		want []TimeOfDay
	}{
		{"all day has none", HeartbeatSpec{Every: Duration(time.Hour)}, nil},
		{"end is exclusive", HeartbeatSpec{Every: Duration(2 * time.Hour), ActiveFrom: clock(8, 0), ActiveTo: clock(14, 0)},
			[]TimeOfDay{clock(8, 0), clock(10, 0), clock(12, 0)}},
		{"counted from the start of the range", HeartbeatSpec{Every: Duration(45 * time.Minute), ActiveFrom: clock(8, 10), ActiveTo: clock(10, 0)},
			[]TimeOfDay{clock(8, 10), clock(8, 55), clock(9, 40)}},
		{"across midnight", HeartbeatSpec{Every: Duration(3 * time.Hour), ActiveFrom: clock(22, 0), ActiveTo: clock(6, 0)},
			[]TimeOfDay{clock(1, 0), clock(4, 0), clock(22, 0)}},
		{"a day-long interval ticks once, at the start", HeartbeatSpec{Every: Duration(24 * time.Hour), ActiveFrom: clock(8, 0), ActiveTo: clock(22, 0)},
			[]TimeOfDay{clock(8, 0)}},
		{"to 24:00", HeartbeatSpec{Every: Duration(6 * time.Hour), ActiveFrom: clock(0, 0), ActiveTo: MinutesPerDay},
			[]TimeOfDay{clock(0, 0), clock(6, 0), clock(12, 0), clock(18, 0)}},
		{"all but a quarter hour, wrapping inside one hour", HeartbeatSpec{Every: Duration(4 * time.Hour), ActiveFrom: clock(8, 30), ActiveTo: clock(8, 15)},
			[]TimeOfDay{clock(0, 30), clock(4, 30), clock(8, 30), clock(12, 30), clock(16, 30), clock(20, 30)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.spec.TimesOfDay())
		})
	}
}

func TestHeartbeatIDs(t *testing.T) {
	tg := SessionKey{Channel: "telegram", Account: "mybot", Chat: "-100123"}
	assert.Equal(t, "heartbeat:telegram:mybot:-100123", HeartbeatScheduleID(tg))
	assert.Equal(t, "heartbeat-tick:session:telegram:mybot:-100123", HeartbeatTickID(tg))
	id, ok := HeartbeatSessionID(HeartbeatScheduleID(tg))
	require.True(t, ok)
	assert.Equal(t, tg.WorkflowID(), id)
	_, ok = HeartbeatSessionID("nightly-report")
	assert.False(t, ok, "a schedule that is not a heartbeat's")
	_, ok = HeartbeatSessionID("heartbeat:")
	assert.False(t, ok)
}

func FuzzParseHeartbeat(f *testing.F) {
	for _, s := range []string{"every 30m 08:00-22:00 Europe/Berlin", "2h 22:00-06:00", "every 5m UTC", "every 1h 24:00-01:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spec, err := ParseHeartbeat(text)
		if err != nil {
			return
		}
		require.NoError(t, spec.Validate())
		every := spec.Every.D()
		require.True(t, every >= HeartbeatMinEvery && every <= HeartbeatMaxEvery)
		again, err := ParseHeartbeat(spec.String())
		require.NoError(t, err)
		require.Equal(t, spec, again)
		if !spec.AllDay() {
			require.NotEmpty(t, spec.TimesOfDay())
		}
	})
}
