package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Heartbeats: a chat's agent looks at a checklist every so often and
// speaks only when something needs attention. The cadence is a Temporal
// Schedule per session (activities.Heartbeats builds it); each tick starts
// a small workflow that signals the session. These are the names, IDs and
// types the schedule, the tick and the session share.
const (
	// WorkflowHeartbeatTick is the workflow type a heartbeat schedule
	// starts: it signals the session once and ends.
	WorkflowHeartbeatTick = "heartbeatTick"

	// ActivitySignalHeartbeat signals a session with a HeartbeatTick,
	// starting the session when it is closed.
	ActivitySignalHeartbeat = "SignalHeartbeat"
	// ActivityUpsertHeartbeat creates or updates a session's schedule
	// from a HeartbeatRequest; it returns the HeartbeatInfo.
	ActivityUpsertHeartbeat = "UpsertHeartbeat"
	// ActivityDeleteHeartbeat removes a session's schedule (none is fine).
	ActivityDeleteHeartbeat = "DeleteHeartbeat"
	// ActivityTriggerHeartbeat runs a session's heartbeat now.
	ActivityTriggerHeartbeat = "TriggerHeartbeat"
	// ActivityDescribeHeartbeat returns a session's HeartbeatInfo.
	ActivityDescribeHeartbeat = "DescribeHeartbeat"
	// ActivityReadHeartbeatChecklist returns the checklist text
	// (REPLYFLOW_HEARTBEAT_FILE), "" when there is none.
	ActivityReadHeartbeatChecklist = "ReadHeartbeatChecklist"
)

// Error types of the heartbeat activities (non-retryable; the message
// is fit to show the person who asked).
const (
	// ErrHeartbeatRequest: the spec or the session cannot be scheduled
	// (an unknown time zone, say).
	ErrHeartbeatRequest = "HeartbeatRequest"
	// ErrNoHeartbeat: the session has no heartbeat to trigger, pause or
	// resume.
	ErrNoHeartbeat = "NoHeartbeat"
	// ErrChecklistUnreadable: the checklist file exists but cannot be
	// read (permissions).
	ErrChecklistUnreadable = "ChecklistUnreadable"
)

// HeartbeatSchedulePrefix starts every heartbeat schedule's ID, so an
// operator finds them all (`replyflow heartbeat list`, the UI's
// Schedules page); HeartbeatTickPrefix starts every tick workflow's ID.
const (
	HeartbeatSchedulePrefix = "heartbeat:"
	HeartbeatTickPrefix     = "heartbeat-tick:"
)

// HeartbeatScheduleID is the schedule of a session:
// heartbeat:chat:mybot:-100123 for session:chat:mybot:-100123.
func HeartbeatScheduleID(key SessionKey) string {
	return HeartbeatSchedulePrefix + strings.TrimPrefix(key.WorkflowID(), WorkflowIDPrefix)
}

// HeartbeatSessionID is the session workflow ID of a heartbeat schedule
// ID; false for an ID that is not a heartbeat schedule's.
func HeartbeatSessionID(scheduleID string) (string, bool) {
	rest, ok := strings.CutPrefix(scheduleID, HeartbeatSchedulePrefix)
	if !ok || rest == "" {
		return "", false
	}
	return WorkflowIDPrefix + rest, true
}

// HeartbeatTickID is the workflow ID the schedule gives its ticks; the
// server appends each tick's scheduled time ("-2026-01-02T08:30:00Z"),
// so a tick has one ID however often its start is retried.
func HeartbeatTickID(key SessionKey) string {
	return HeartbeatTickPrefix + key.WorkflowID()
}

// HeartbeatTick is the payload of the session's heartbeat signal. ID is
// the tick workflow's ID, the same for every delivery of one tick: the
// session counts a tick once however often it arrives.
type HeartbeatTick struct {
	ID          string    `json:"id"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// HeartbeatTickParams are the tick workflow's input, set in the
// schedule's action.
type HeartbeatTickParams struct {
	Session SessionKey `json:"session"`
}

// HeartbeatSignal asks the SignalHeartbeat activity to deliver Tick to
// Session.
type HeartbeatSignal struct {
	Session SessionKey    `json:"session"`
	Tick    HeartbeatTick `json:"tick"`
}

// HeartbeatRequest asks for a session's heartbeat to run on Spec; By
// (who asked, "provider:id" or "operator:name") goes into the schedule's
// note.
type HeartbeatRequest struct {
	Session SessionKey    `json:"session"`
	Spec    HeartbeatSpec `json:"spec"`
	By      string        `json:"by,omitempty"`
}

// HeartbeatInfo is where a session's heartbeat stands. On is false when
// the session has none; Note says who set or paused it and why.
type HeartbeatInfo struct {
	ScheduleID string    `json:"schedule_id"`
	On         bool      `json:"on"`
	Paused     bool      `json:"paused,omitempty"`
	Note       string    `json:"note,omitempty"`
	Spec       string    `json:"spec,omitempty"`
	NextRun    time.Time `json:"next_run,omitzero"`
	LastRun    time.Time `json:"last_run,omitzero"`
}

// TimeOfDay is a local clock time in minutes since midnight; 1440
// ("24:00") only ends a range.
type TimeOfDay int

// MinutesPerDay is the length of a day in TimeOfDay units.
const MinutesPerDay TimeOfDay = 24 * 60

func (t TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d", int(t)/60, int(t)%60) }

// HeartbeatSpec is when a heartbeat ticks: every Every, and with active
// hours only from ActiveFrom (inclusive) to ActiveTo (exclusive) in
// TimeZone, a range that may cross midnight. ActiveFrom == ActiveTo == 0
// means all day.
type HeartbeatSpec struct {
	Every      Duration  `json:"every"`
	ActiveFrom TimeOfDay `json:"active_from,omitempty"`
	ActiveTo   TimeOfDay `json:"active_to,omitempty"`
	// TimeZone is an IANA name (Europe/Berlin); empty is UTC.
	TimeZone string `json:"time_zone,omitempty"`
}

// Bounds of what ParseHeartbeat accepts: a few minutes at least (each
// tick can cost a model turn), a day at most.
const (
	HeartbeatMinEvery = 5 * time.Minute
	HeartbeatMaxEvery = 24 * time.Hour
)

// maxHeartbeatSpecText keeps the spec's text within what the server
// keeps beside a calendar (a comment of 200 bytes).
const maxHeartbeatSpecText = 200

// AllDay reports whether the spec has no active hours.
func (s HeartbeatSpec) AllDay() bool { return s.ActiveFrom == 0 && s.ActiveTo == 0 }

// String is the spec as ParseHeartbeat reads it back:
// "every 30m 08:00-22:00 Europe/Berlin".
func (s HeartbeatSpec) String() string {
	parts := []string{"every " + shortDuration(s.Every.D())}
	if !s.AllDay() {
		parts = append(parts, s.ActiveFrom.String()+"-"+s.ActiveTo.String())
	}
	if s.TimeZone != "" {
		parts = append(parts, s.TimeZone)
	}
	return strings.Join(parts, " ")
}

// shortDuration drops the zero units time.Duration prints: 30m, 1h30m, 2h.
func shortDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

// Validate checks what any schedule needs; ParseHeartbeat adds the bounds
// a chat may ask for. With active hours the interval must divide a day,
// so the ticks fall at the same clock times every day, counted from the
// start of the range.
func (s HeartbeatSpec) Validate() error {
	every := s.Every.D()
	if every < time.Second || every > HeartbeatMaxEvery {
		return fmt.Errorf("every must be from 1s to %s, got %s", shortDuration(HeartbeatMaxEvery), every)
	}
	if err := checkTimeZone(s.TimeZone); err != nil {
		return err
	}
	if len(s.String()) > maxHeartbeatSpecText {
		return fmt.Errorf("the heartbeat spec is longer than %d characters", maxHeartbeatSpecText)
	}
	if s.AllDay() {
		return nil
	}
	if s.ActiveFrom < 0 || s.ActiveFrom >= MinutesPerDay || s.ActiveTo <= 0 || s.ActiveTo > MinutesPerDay {
		return fmt.Errorf("active hours %s-%s are not clock times from 00:00 to 24:00", s.ActiveFrom, s.ActiveTo)
	}
	if s.ActiveFrom == s.ActiveTo {
		return fmt.Errorf("active hours %s-%s are empty; leave them out for all day", s.ActiveFrom, s.ActiveTo)
	}
	if every%time.Minute != 0 || time.Duration(MinutesPerDay)*time.Minute%every != 0 {
		return fmt.Errorf("with active hours, every must divide a day (5m, 10m, 15m, 20m, 30m, 45m, 1h, 90m, 2h, 3h, 4h, 6h, 8h, 12h, 24h...); %s does not", shortDuration(every))
	}
	return nil
}

// TimesOfDay are the local clock times a spec with active hours ticks
// at: from the start of the range, every Every, while inside it; the
// range may wrap past midnight. Sorted; nil for an all-day spec.
func (s HeartbeatSpec) TimesOfDay() []TimeOfDay {
	if s.AllDay() {
		return nil
	}
	step := TimeOfDay(s.Every.D() / time.Minute)
	if step <= 0 {
		return nil
	}
	length := (s.ActiveTo - s.ActiveFrom + MinutesPerDay) % MinutesPerDay
	if length == 0 {
		length = MinutesPerDay
	}
	var out []TimeOfDay
	for offset := TimeOfDay(0); offset < length; offset += step {
		out = append(out, (s.ActiveFrom+offset)%MinutesPerDay)
	}
	slices.Sort(out)
	return out
}

// checkTimeZone checks the shape of an IANA name only: whether the zone
// exists is for whoever has the time zone database (the activity, the
// CLI, the Temporal server), since rules here do no I/O.
func checkTimeZone(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > 64 {
		return errors.New("the time zone name is longer than 64 characters")
	}
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		ok := letter || i > 0 && (r >= '0' && r <= '9' || r == '/' || r == '_' || r == '-' || r == '+')
		if !ok {
			return fmt.Errorf("%q is not a time zone name; use an IANA name like Europe/Berlin or UTC", name)
		}
	}
	return nil
}

// ParseHeartbeat reads a heartbeat spec as a person writes it:
// "every 30m", "every 30m 08:00-22:00 Europe/Berlin", "2h 22:00-06:00"
// (a range across midnight). The word "every" is optional; the interval
// comes first, the active hours and the time zone in any order after it.
// The interval is held to what a chat may ask: HeartbeatMinEvery to
// HeartbeatMaxEvery, in whole minutes.
func ParseHeartbeat(text string) (HeartbeatSpec, error) {
	spec, err := parseHeartbeatText(text)
	if err != nil {
		return spec, err
	}
	every := spec.Every.D()
	if every < HeartbeatMinEvery || every > HeartbeatMaxEvery {
		return HeartbeatSpec{}, fmt.Errorf("every must be from %s to %s, got %s",
			shortDuration(HeartbeatMinEvery), shortDuration(HeartbeatMaxEvery), shortDuration(every))
	}
	if every%time.Minute != 0 {
		return HeartbeatSpec{}, fmt.Errorf("every must be whole minutes, got %s", every)
	}
	return spec, spec.Validate()
}

// ReadHeartbeatSpec reads a spec's text (HeartbeatSpec.String) back,
// held only to Validate: a schedule kept by the server may tick faster
// than a chat may ask (a test's, an operator's).
func ReadHeartbeatSpec(text string) (HeartbeatSpec, error) {
	spec, err := parseHeartbeatText(text)
	if err != nil {
		return spec, err
	}
	return spec, spec.Validate()
}

// parseHeartbeatText reads the words of a spec, checking their syntax.
func parseHeartbeatText(text string) (HeartbeatSpec, error) {
	fields := strings.Fields(text)
	if len(fields) > 0 && strings.EqualFold(fields[0], "every") {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return HeartbeatSpec{}, errors.New("say how often, for example: every 30m 08:00-22:00 Europe/Berlin")
	}
	every, err := time.ParseDuration(strings.ToLower(fields[0]))
	if err != nil {
		return HeartbeatSpec{}, fmt.Errorf("%q is not an interval; write it like 30m, 2h or 1h30m", fields[0])
	}
	spec := HeartbeatSpec{Every: Duration(every)}
	hours, zone := false, false
	for _, f := range fields[1:] {
		looksLikeHours := strings.Contains(f, ":") || f[0] >= '0' && f[0] <= '9'
		switch {
		case looksLikeHours && !hours:
			from, to, err := parseActiveHours(f)
			if err != nil {
				return HeartbeatSpec{}, err
			}
			spec.ActiveFrom, spec.ActiveTo, hours = from, to, true
		case !looksLikeHours && !zone:
			spec.TimeZone, zone = f, true
		default:
			return HeartbeatSpec{}, fmt.Errorf("%q is one word too many; write: every 30m [08:00-22:00] [time zone]", f)
		}
	}
	return spec, nil
}

// parseActiveHours reads "08:00-22:00"; "24:00" may end a range.
func parseActiveHours(s string) (from, to TimeOfDay, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a range of hours; write it like 08:00-22:00", s)
	}
	if from, err = parseClock(a, false); err == nil {
		to, err = parseClock(b, true)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("active hours %q: %w", s, err)
	}
	if from == to {
		return 0, 0, fmt.Errorf("active hours %q are empty; leave them out for all day", s)
	}
	return from, to, nil
}

// parseClock reads HH:MM from 00:00 to 23:59, and 24:00 when it ends a
// range.
func parseClock(s string, end bool) (TimeOfDay, error) {
	h, m, ok := strings.Cut(s, ":")
	hour, herr := strconv.Atoi(h)
	minute, merr := strconv.Atoi(m)
	if !ok || herr != nil || merr != nil || !digits(h, 1, 2) || !digits(m, 2, 2) ||
		minute > 59 || hour > 24 || hour == 24 && (minute != 0 || !end) {
		return 0, fmt.Errorf("%q is not a clock time from 00:00 to 23:59 (24:00 may end a range)", s)
	}
	return TimeOfDay(hour*60 + minute), nil
}

func digits(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
