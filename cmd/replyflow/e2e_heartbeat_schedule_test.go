package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
)

// The schedule side of heartbeats against a real server: a schedule's
// ticks reach the session as `heartbeat` signals with the tick's own
// workflow ID, and the operator verbs pause, trigger, resume, change and
// delete it. (What the session does with a tick is the session's tests'.)

// heartbeatTicks are the payloads of the heartbeat signals the session
// received, over every run, oldest first; none while it does not exist.
func heartbeatTicks(ctx context.Context, c client.Client, id string) ([]pipeline.HeartbeatTick, error) {
	var ticks []pipeline.HeartbeatTick
	for runID := ""; ; {
		var run []pipeline.HeartbeatTick
		previous := ""
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			if start := ev.GetWorkflowExecutionStartedEventAttributes(); start != nil {
				previous = start.GetContinuedExecutionRunId()
			}
			sig := ev.GetWorkflowExecutionSignaledEventAttributes()
			if sig == nil || sig.GetSignalName() != "heartbeat" {
				continue
			}
			var tick pipeline.HeartbeatTick
			if err := converter.GetDefaultDataConverter().FromPayloads(sig.GetInput(), &tick); err != nil {
				return nil, err
			}
			run = append(run, tick)
		}
		ticks = append(run, ticks...)
		if previous == "" {
			return ticks, nil
		}
		runID = previous
	}
}

// waitTicks waits until the session has received at least n heartbeat
// signals, and returns them.
func waitTicks(t *testing.T, c client.Client, key pipeline.SessionKey, n int) []pipeline.HeartbeatTick {
	t.Helper()
	var ticks []pipeline.HeartbeatTick
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		ticks, err = heartbeatTicks(ctx, c, key.WorkflowID())
		return err == nil && len(ticks) >= n
	}, 60*time.Second, 200*time.Millisecond, "%s receives %d heartbeat signal(s); has %d", key.WorkflowID(), n, len(ticks))
	return ticks
}

func countTicks(t *testing.T, c client.Client, key pipeline.SessionKey) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ticks, err := heartbeatTicks(ctx, c, key.WorkflowID())
	require.NoError(t, err)
	return len(ticks)
}

func runHeartbeatVerb(t *testing.T, s *stack, args ...string) string {
	t.Helper()
	var out strings.Builder
	require.NoError(t, heartbeatCommand(context.Background(), s.cfg, args, &out, s.logger), "replyflow heartbeat %s", strings.Join(args, " "))
	return out.String()
}

func TestHeartbeatScheduleTicksReachTheSession(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	s := startStack(t, testConfig(t))
	s.startWorker(nil)
	ctx := context.Background()
	chat := uniqueChat("hb-tick")
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	// A person starts the session: ticks alone keep none alive (without
	// a checklist each would complete its run, and the ticks would be
	// spread over runs this test does not follow).
	events := subscribe(t, s.baseURL, key.Chat)
	code, body := s.post(key.Chat, `{"message_id":"hb-hello","sender_id":"alice","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("hb-hello"))
	hb := newHeartbeats(s.client, s.cfg, s.logger)
	t.Cleanup(func() { _ = hb.DeleteHeartbeat(context.Background(), key) })

	// Faster than a chat may ask (ParseHeartbeat's 5m), as only the
	// activity allows: the server takes intervals from 1s.
	info, err := hb.UpsertHeartbeat(ctx, pipeline.HeartbeatRequest{
		Session: key, Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(2 * time.Second)}, By: "test",
	})
	require.NoError(t, err)
	assert.Equal(t, pipeline.HeartbeatInfo{ScheduleID: "heartbeat:webchat:" + chat, On: true, Note: "set by test", Spec: "every 2s", NextRun: info.NextRun}, info)
	assert.WithinDuration(t, time.Now(), info.NextRun, 3*time.Second)

	first := waitTicks(t, s.client, key, 1)[0]
	assert.Equal(t, pipeline.HeartbeatTickID(key)+"-"+first.ScheduledAt.UTC().Format(time.RFC3339), first.ID,
		"the tick's ID is the schedule's action ID and its scheduled time")
	require.NoError(t, s.client.GetWorkflow(ctx, first.ID, "").Get(ctx, nil), "the tick workflow %s completed", first.ID)
	d, err := s.client.DescribeWorkflowExecution(ctx, first.ID, "")
	require.NoError(t, err)
	assert.Equal(t, pipeline.WorkflowHeartbeatTick, d.WorkflowExecutionInfo.Type.Name)
	assert.Equal(t, s.cfg.TaskQueue, d.WorkflowExecutionInfo.TaskQueue, "ticks run on the sessions' task queue")
	assert.LessOrEqual(t, d.WorkflowExecutionInfo.HistoryLength, int64(12), "a tick's history stays tiny")

	// Paused, nothing ticks but a trigger.
	out := runHeartbeatVerb(t, s, "pause", "--by", "ops", "--reason", "quiet please", "webchat:"+chat)
	assert.Equal(t, "Heartbeat schedule heartbeat:webchat:"+chat+" paused.\n", out)
	info, err = hb.DescribeHeartbeat(ctx, key)
	require.NoError(t, err)
	assert.True(t, info.Paused)
	assert.Equal(t, "paused by operator:ops: quiet please", info.Note)
	handle := s.client.ScheduleClient().GetHandle(ctx, info.ScheduleID)
	require.Eventually(t, func() bool {
		d, err := handle.Describe(ctx)
		return err == nil && len(d.Info.RunningWorkflows) == 0
	}, 30*time.Second, 100*time.Millisecond, "the tick running at the pause ends")
	settled := countTicks(t, s.client, key)

	assert.Equal(t, "Heartbeat schedule heartbeat:webchat:"+chat+" triggered: a tick runs now.\n",
		runHeartbeatVerb(t, s, "trigger", "session:webchat:"+chat))
	triggered := waitTicks(t, s.client, key, settled+1)[settled]
	assert.True(t, strings.HasPrefix(triggered.ID, pipeline.HeartbeatTickID(key)+"-"), triggered.ID)
	require.Never(t, func() bool { return countTicks(t, s.client, key) > settled+1 }, 5*time.Second, 500*time.Millisecond,
		"a paused schedule of 2s ticks no more")

	var list string
	require.Eventually(t, func() bool {
		list = runHeartbeatVerb(t, s, "list")
		return strings.Contains(list, "session:webchat:"+chat) && strings.Contains(list, "paused")
	}, 30*time.Second, 500*time.Millisecond, "list shows the paused heartbeat (visibility is eventually consistent): %s", list)
	assert.Contains(t, list, "every 2s")
	assert.Contains(t, list, "quiet please")

	// A new spec from the chat leaves an operator's pause as it is.
	info, err = hb.UpsertHeartbeat(ctx, pipeline.HeartbeatRequest{
		Session: key, Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(3 * time.Second)}, By: "webchat:owner",
	})
	require.NoError(t, err)
	assert.Equal(t, "every 3s", info.Spec)
	assert.True(t, info.Paused)
	assert.Equal(t, "paused by operator:ops: quiet please", info.Note)

	runHeartbeatVerb(t, s, "resume", "webchat:"+chat)
	info, err = hb.DescribeHeartbeat(ctx, key)
	require.NoError(t, err)
	assert.False(t, info.Paused)
	waitTicks(t, s.client, key, settled+2)

	// Changed to active hours: the ticks follow the calendar (see
	// TestHeartbeatCalendarsTickAtLocalTimesOnTheServer).
	out = runHeartbeatVerb(t, s, "set", "--by", "ops", "webchat:"+chat, "every", "30m", "08:00-22:00", "Asia/Kolkata")
	assert.Contains(t, out, "Heartbeat of session:webchat:"+chat+": every 30m 08:00-22:00 Asia/Kolkata, on, next tick in ")
	info, err = hb.DescribeHeartbeat(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "every 30m 08:00-22:00 Asia/Kolkata", info.Spec)
	assert.Equal(t, "set by operator:ops", info.Note)

	assert.Equal(t, "Heartbeat schedule heartbeat:webchat:"+chat+" deleted.\n", runHeartbeatVerb(t, s, "off", "webchat:"+chat))
	info, err = hb.DescribeHeartbeat(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, pipeline.HeartbeatInfo{ScheduleID: "heartbeat:webchat:" + chat}, info, "no heartbeat any more")
	err = heartbeatCommand(ctx, s.cfg, []string{"trigger", "webchat:" + chat}, &strings.Builder{}, s.logger)
	assert.ErrorContains(t, err, "session:webchat:"+chat+" has no heartbeat")
}

// expectedTicks are the n tick times from the first one at or after
// from: the spec's clock times on consecutive days in loc.
func expectedTicks(spec pipeline.HeartbeatSpec, loc *time.Location, from time.Time, n int) []time.Time {
	var out []time.Time
	day := from.In(loc).AddDate(0, 0, -1)
	for len(out) < n {
		for _, tod := range spec.TimesOfDay() {
			at := time.Date(day.Year(), day.Month(), day.Day(), int(tod)/60, int(tod)%60, 0, 0, loc)
			if !at.Before(from) && len(out) < n {
				out = append(out, at)
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return out
}

// TestHeartbeatCalendarsTickAtLocalTimesOnTheServer checks the spec
// mapping against the server's own reading of it: the next times it
// plans are the rules' clock times in the chat's time zone (Asia/Kolkata:
// a half-hour offset and no daylight saving, so the expectation is exact
// on any date).
func TestHeartbeatCalendarsTickAtLocalTimesOnTheServer(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	cfg := testConfig(t)
	s := &stack{t: t, cfg: cfg, client: temporalServer.Client(), logger: testLogger(t, cfg.LogLevel)}
	ctx := context.Background()
	chat := uniqueChat("hb-hours")
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	hb := newHeartbeats(s.client, s.cfg, s.logger)
	t.Cleanup(func() { _ = hb.DeleteHeartbeat(context.Background(), key) })
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	handle := s.client.ScheduleClient().GetHandle(ctx, pipeline.HeartbeatScheduleID(key))

	for _, text := range []string{
		"every 30m 08:00-22:00 Asia/Kolkata",
		"every 45m 22:00-06:00 Asia/Kolkata", // across midnight, minutes that change hour by hour
		"every 24h 08:30-24:00 Asia/Kolkata", // one a day, at the start of the range
		"every 90m 08:10-08:00 Asia/Kolkata", // all day but ten minutes, wrapping inside one hour
	} {
		spec, err := pipeline.ParseHeartbeat(text)
		require.NoError(t, err)
		setAt := time.Now()
		runHeartbeatVerb(t, s, append([]string{"set", "webchat:" + chat}, strings.Fields(text)...)...)
		var planned []time.Time
		require.Eventually(t, func() bool {
			d, err := handle.Describe(ctx)
			if err != nil || len(d.Info.NextActionTimes) == 0 {
				return false
			}
			read, err := activities.HeartbeatSpecOf(d.Schedule.Spec)
			planned = d.Info.NextActionTimes
			return err == nil && read == spec
		}, 30*time.Second, 200*time.Millisecond, "%s: the server has the new spec", text)
		require.Len(t, planned, 10, text)
		want := expectedTicks(spec, kolkata, setAt, len(planned)+1)
		if !want[0].Equal(planned[0]) && want[0].Before(setAt.Add(10*time.Second)) {
			want = want[1:] // a tick came due while the change travelled
		}
		for i := range planned {
			assert.True(t, want[i].Equal(planned[i]), "%s: tick %d planned at %s, the rules say %s", text, i,
				planned[i].In(kolkata), want[i])
		}
	}
}
