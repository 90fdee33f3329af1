package activities

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

type recordedTick struct {
	session pipeline.SessionKey
	tick    pipeline.HeartbeatTick
}

type fakeSignaler struct {
	ticks []recordedTick
	err   error
}

func (f *fakeSignaler) Heartbeat(_ context.Context, session pipeline.SessionKey, tick pipeline.HeartbeatTick) error {
	f.ticks = append(f.ticks, recordedTick{session, tick})
	return f.err
}

func TestSignalHeartbeatHandsTheTickToTheSession(t *testing.T) {
	sessions := &fakeSignaler{}
	h := &Heartbeats{Sessions: sessions}
	key := pipeline.SessionKey{Channel: "webchat", Chat: "hb"}
	tick := pipeline.HeartbeatTick{ID: "heartbeat-tick:session:webchat:hb-2026-01-02T08:30:00Z", ScheduledAt: time.Date(2026, 1, 2, 8, 30, 0, 0, time.UTC)}
	require.NoError(t, h.SignalHeartbeat(context.Background(), pipeline.HeartbeatSignal{Session: key, Tick: tick}))
	assert.Equal(t, []recordedTick{{key, tick}}, sessions.ticks)

	sessions.err = errors.New("frontend unavailable")
	err := h.SignalHeartbeat(context.Background(), pipeline.HeartbeatSignal{Session: key, Tick: tick})
	assert.ErrorContains(t, err, "signal heartbeat tick "+tick.ID+" to session:webchat:hb: frontend unavailable")
	var appErr *temporal.ApplicationError
	assert.False(t, errors.As(err, &appErr), "a failed signal is retried")

	err = h.SignalHeartbeat(context.Background(), pipeline.HeartbeatSignal{Session: pipeline.SessionKey{Channel: "webchat"}, Tick: tick})
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, pipeline.ErrHeartbeatRequest, appErr.Type())
	assert.Len(t, sessions.ticks, 2, "a tick for no session signals nothing")
}

func TestUpsertHeartbeatRefusesWhatCannotBeScheduled(t *testing.T) {
	h := &Heartbeats{} // no client: refused before any call
	key := pipeline.SessionKey{Channel: "webchat", Chat: "hb"}
	for _, c := range []struct {
		req  pipeline.HeartbeatRequest
		want string
	}{
		{pipeline.HeartbeatRequest{Session: key, Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(time.Hour), TimeZone: "Europe/Atlantis"}}, `unknown time zone "Europe/Atlantis"`},
		{pipeline.HeartbeatRequest{Session: key, Spec: pipeline.HeartbeatSpec{}}, "every must be from 1s to 24h"},
		{pipeline.HeartbeatRequest{Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(time.Hour)}}, "heartbeat for no valid session"},
	} {
		_, err := h.UpsertHeartbeat(context.Background(), c.req)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr, c.want)
		assert.Contains(t, appErr.Error(), c.want)
		assert.True(t, appErr.NonRetryable())
		assert.Equal(t, pipeline.ErrHeartbeatRequest, appErr.Type())
	}
}

func TestReadHeartbeatChecklist(t *testing.T) {
	key := pipeline.SessionKey{Channel: "webchat", Chat: "hb"}
	dir := t.TempDir()
	var logs bytes.Buffer
	h := &Heartbeats{ChecklistFile: filepath.Join(dir, "HEARTBEAT.md"), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	read := func() string {
		t.Helper()
		text, err := h.ReadHeartbeatChecklist(context.Background(), key)
		require.NoError(t, err)
		return text
	}

	assert.Empty(t, read(), "missing")
	assert.Empty(t, read(), "still missing")
	assert.Equal(t, 1, strings.Count(logs.String(), "checklist file is missing"), "said once")
	assert.Contains(t, logs.String(), "level=WARN")

	require.NoError(t, os.WriteFile(h.ChecklistFile, []byte("\n  \n"), 0o600))
	assert.Empty(t, read(), "blank")
	require.NoError(t, os.WriteFile(h.ChecklistFile, []byte("# Checks\n- inbox older than 1h?\n"), 0o600))
	assert.Equal(t, "# Checks\n- inbox older than 1h?", read())

	require.NoError(t, os.Remove(h.ChecklistFile))
	assert.Empty(t, read())
	assert.Equal(t, 2, strings.Count(logs.String(), "checklist file is missing"), "said again once it was back and went")

	line := strings.Repeat("x", 99) + "\n"
	require.NoError(t, os.WriteFile(h.ChecklistFile, []byte(strings.Repeat(line, 200)), 0o600)) // 20,000 bytes
	got := read()
	assert.LessOrEqual(t, len(got), MaxChecklistBytes)
	assert.Equal(t, MaxChecklistBytes/100*100-1, len(got), "cut at the last whole line")
	assert.Contains(t, logs.String(), "longer than 16 KiB")

	none := &Heartbeats{}
	text, err := none.ReadHeartbeatChecklist(context.Background(), key)
	require.NoError(t, err)
	assert.Empty(t, text, "no file configured: no checklist")
}

func TestReadHeartbeatChecklistUnreadableIsNotRetried(t *testing.T) {
	h := &Heartbeats{ChecklistFile: t.TempDir()} // a directory opens but does not read
	_, err := h.ReadHeartbeatChecklist(context.Background(), pipeline.SessionKey{Channel: "webchat", Chat: "hb"})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, pipeline.ErrChecklistUnreadable, appErr.Type())
	assert.Contains(t, appErr.Error(), "read the heartbeat checklist "+h.ChecklistFile)
}

func TestCutAtLineKeepsWholeCharacters(t *testing.T) {
	assert.Equal(t, "ab", string(cutAtLine([]byte("ab\ncd"))))
	assert.Equal(t, "ab", string(cutAtLine([]byte("ab\xe2\x82"))), "a character cut in two is dropped")
}
