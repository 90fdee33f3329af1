package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestParseHeartbeatArgs(t *testing.T) {
	tg := pipeline.SessionKey{Channel: "telegram", Account: "bot", Chat: "-100"}
	got, err := parseHeartbeatArgs([]string{"set", "--by", "ana", "telegram:bot:-100", "every", "30m", "08:00-22:00", "Europe/Berlin"})
	require.NoError(t, err)
	assert.Equal(t, heartbeatArgs{verb: "set", session: tg, by: "operator:ana", spec: pipeline.HeartbeatSpec{
		Every: pipeline.Duration(30 * time.Minute), ActiveFrom: 8 * 60, ActiveTo: 22 * 60, TimeZone: "Europe/Berlin",
	}}, got)

	got, err = parseHeartbeatArgs([]string{"pause", "--by", "ana", "--reason", "model costs", "session:telegram:bot:-100"})
	require.NoError(t, err)
	assert.Equal(t, heartbeatArgs{verb: "pause", session: tg, by: "operator:ana", note: "paused by operator:ana: model costs"}, got)

	got, err = parseHeartbeatArgs([]string{"resume", "--by", "ana", "webchat:demo"})
	require.NoError(t, err)
	assert.Equal(t, "resumed by operator:ana", got.note)

	got, err = parseHeartbeatArgs([]string{"list"})
	require.NoError(t, err)
	assert.Equal(t, "list", got.verb)

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: replyflow heartbeat list"},
		{[]string{"sometimes", "webchat:demo"}, `unknown heartbeat verb "sometimes"`},
		{[]string{"set", "webchat:demo"}, "usage:"},
		{[]string{"set", "webchat:demo", "every", "1m"}, "heartbeat spec: every must be from 5m to 24h, got 1m"},
		{[]string{"set", "webchat:demo", "every", "30m", "Mars/Olympus", "x"}, `"x" is one word too many`},
		{[]string{"trigger"}, "usage:"},
		{[]string{"off", "webchat:demo", "now"}, "usage:"},
		{[]string{"list", "webchat:demo"}, "usage:"},
		{[]string{"trigger", "--reason", "why", "webchat:demo"}, "--reason is for pause and resume"},
		{[]string{"pause", "--colour", "red", "webchat:demo"}, "flag provided but not defined: -colour"},
		{[]string{"off", "demo"}, `"demo" is not a session`},
		{[]string{"off", "webchat:has space"}, `"webchat:has space" is not a session`},
	} {
		_, err := parseHeartbeatArgs(c.args)
		assert.ErrorContains(t, err, c.want, "%q", c.args)
	}
}

func TestDescribeHeartbeatLine(t *testing.T) {
	now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	info := pipeline.HeartbeatInfo{On: true, Spec: "every 30m", NextRun: now.Add(12 * time.Minute)}
	assert.Equal(t, "every 30m, on, next tick in 12m0s", describeHeartbeat(info, now))
	info.Paused, info.Note = true, "paused by operator:ana: costs"
	assert.Equal(t, "every 30m, paused (paused by operator:ana: costs)", describeHeartbeat(info, now))
	assert.Equal(t, "off", describeHeartbeat(pipeline.HeartbeatInfo{}, now))
	assert.Equal(t, "3m0s ago", whenRelative(now.Add(-3*time.Minute), now))
	assert.Equal(t, "-", whenRelative(time.Time{}, now))
}
