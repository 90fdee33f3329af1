package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// heartbeatModel answers heartbeat prompts with what report says (then
// HEARTBEAT_OK again), and holds a user message whose text is "hold"
// until release is closed.
type heartbeatModel struct {
	mu         sync.Mutex
	report     string
	heartbeats int
	holding    bool
	release    chan struct{}
}

func (*heartbeatModel) Name() string { return "test/heartbeat" }

func (m *heartbeatModel) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	text := lastUserText(p)
	if strings.Contains(text, "[HEARTBEAT") {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.holding {
			return models.Completion{}, &models.Error{Type: pipeline.ErrFormat, Model: m.Name(), Err: errUnexpectedHeartbeat}
		}
		m.heartbeats++
		reply := "HEARTBEAT_OK all quiet"
		if m.report != "" {
			reply, m.report = m.report, ""
		}
		return models.Completion{Text: reply}, nil
	}
	if text == "hold" {
		m.mu.Lock()
		m.holding = true
		m.mu.Unlock()
		select {
		case <-m.release:
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		}
		m.mu.Lock()
		m.holding = false
		m.mu.Unlock()
	}
	return models.Completion{Text: "You said: " + text}, nil
}

var errUnexpectedHeartbeat = errors.New("a heartbeat turn ran while a user turn was running")

func (m *heartbeatModel) set(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// waitHeartbeat polls the session's state until its last heartbeat
// satisfies ok, and returns it.
func waitHeartbeat(t *testing.T, s *stack, key pipeline.SessionKey, what string, ok func(workflows.HeartbeatRecord) bool) workflows.HeartbeatRecord {
	t.Helper()
	var last workflows.HeartbeatRecord
	require.Eventually(t, func() bool {
		snap := s.stateOf(key)
		if snap.Chat == nil || snap.Chat.LastHeartbeat == nil {
			return false
		}
		last = *snap.Chat.LastHeartbeat
		return ok(last)
	}, 60*time.Second, 100*time.Millisecond, "%s; the last heartbeat is %+v", what, last)
	return last
}

// TestHeartbeatTurnsOnARealSchedule: a Schedule of 2 s ticks drives
// heartbeat turns in a live session. HEARTBEAT_OK is never shown, a tick
// while the user's turn runs is skipped, and a report is sent once.
func TestHeartbeatTurnsOnARealSchedule(t *testing.T) {
	cfg := testConfig(t)
	cfg.HeartbeatFile = filepath.Join(t.TempDir(), "HEARTBEAT.md")
	require.NoError(t, os.WriteFile(cfg.HeartbeatFile, []byte("- is the build green?\n"), 0o600))
	s := startStack(t, cfg)
	model := &heartbeatModel{release: make(chan struct{})}
	s.startWorker(model)
	ctx := context.Background()
	chat := uniqueChat("hbt-live")
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("m1"))

	hb := newHeartbeats(s.client, s.cfg, s.logger)
	t.Cleanup(func() { _ = hb.DeleteHeartbeat(context.Background(), key) })
	_, err := hb.UpsertHeartbeat(ctx, pipeline.HeartbeatRequest{Session: key, Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(2 * time.Second)}, By: "test"})
	require.NoError(t, err)
	acked := waitHeartbeat(t, s, key, "a tick is acknowledged without a word", func(h workflows.HeartbeatRecord) bool {
		return h.Outcome == workflows.HeartbeatAcked
	})

	// A user turn that runs across several ticks: each is skipped.
	code, body = s.post(chat, `{"message_id":"m2","sender_id":"alice","text":"hold"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen = append(seen, events.collectUntil(t, 30*time.Second, isReaction("m2", "✍️"))...)
	skipped := waitHeartbeat(t, s, key, "a tick while the turn runs is skipped", func(h workflows.HeartbeatRecord) bool {
		return h.TickID != acked.TickID && h.Outcome == workflows.HeartbeatSkippedBusy
	})
	close(model.release)
	seen = append(seen, events.collectUntil(t, 30*time.Second, isReplyTo("m2"))...)

	// Something needs attention: said once, then quiet again.
	model.set(func() { model.report = "The build is red since 13:10." })
	seen = append(seen, events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool {
		return ev.Type == "message" && ev.Text == "The build is red since 13:10."
	})...)
	reported := waitHeartbeat(t, s, key, "the report is recorded", func(h workflows.HeartbeatRecord) bool {
		return h.Outcome == workflows.HeartbeatDelivered
	})
	waitHeartbeat(t, s, key, "the next tick is quiet again", func(h workflows.HeartbeatRecord) bool {
		return h.TickID != reported.TickID && h.Outcome == workflows.HeartbeatAcked
	})
	require.NoError(t, hb.DeleteHeartbeat(ctx, key))
	assert.NotEqual(t, skipped.TickID, reported.TickID)

	var messages []string
	for _, ev := range seen {
		if ev.Type == "message" {
			messages = append(messages, ev.Text)
		}
	}
	assert.Equal(t, []string{"You said: hello", "You said: hold", "The build is red since 13:10."}, messages,
		"HEARTBEAT_OK never reaches the chat, and the report comes once")
	for _, ev := range seen {
		if ev.Type == "reaction" {
			assert.Contains(t, []string{"m1", "m2"}, ev.MessageID, "a heartbeat turn shows no reaction")
		}
	}
	snap := s.stateOf(key)
	assert.Equal(t, 0, snap.Counters.Denied)
	model.set(func() { assert.GreaterOrEqual(t, model.heartbeats, 3, "ticks before, and after, the busy turn ran") })
	recordHistory(t, s.client, chat, "heartbeat_turns")
}

// A heartbeat that keeps answering the same trips its breaker, and its
// Schedule then starts no tick before the back-off ends: the ticks it
// would have answered without the model cost no workflow either.
func TestAHeartbeatThatKeepsAnsweringTheSameBacksOffOnItsSchedule(t *testing.T) {
	cfg := testConfig(t)
	cfg.BreakerHeartbeatSame, cfg.BreakerHeartbeatBackoff, cfg.BreakerHeartbeatBackoffMax = 2, time.Hour, 2*time.Hour
	cfg.HeartbeatFile = filepath.Join(t.TempDir(), "HEARTBEAT.md")
	require.NoError(t, os.WriteFile(cfg.HeartbeatFile, []byte("- is the build green?\n"), 0o600))
	s := startStack(t, cfg)
	model := &heartbeatModel{release: make(chan struct{})}
	s.startWorker(model)
	ctx := context.Background()
	chat := uniqueChat("hbt-backoff")
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	events := subscribe(t, s.baseURL, chat)
	code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"hello"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("m1"))

	hb := newHeartbeats(s.client, s.cfg, s.logger)
	t.Cleanup(func() { _ = hb.DeleteHeartbeat(context.Background(), key) })
	started := time.Now()
	_, err := hb.UpsertHeartbeat(ctx, pipeline.HeartbeatRequest{Session: key, Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(time.Second)}, By: "test"})
	require.NoError(t, err)

	handle := s.client.ScheduleClient().GetHandle(ctx, pipeline.HeartbeatScheduleID(key))
	var desc *client.ScheduleDescription
	require.Eventually(t, func() bool {
		desc, err = handle.Describe(ctx)
		return err == nil && desc.Schedule.Spec.StartAt.After(started.Add(50*time.Minute))
	}, 60*time.Second, 100*time.Millisecond, "the Schedule starts again only after the back-off")
	assert.Contains(t, desc.Schedule.State.Note, "backs off until", "the Schedule says why, for the UI")
	for _, next := range desc.Info.NextActionTimes {
		assert.False(t, next.Before(desc.Schedule.Spec.StartAt.Truncate(time.Second)), "no tick is due before the back-off ends (to the second): %s", next)
	}
	model.set(func() { assert.Equal(t, 2, model.heartbeats, "the model answered the two ticks that tripped it") })

	// Setting the heartbeat again starts it at once.
	_, err = hb.UpsertHeartbeat(ctx, pipeline.HeartbeatRequest{Session: key, Spec: pipeline.HeartbeatSpec{Every: pipeline.Duration(time.Minute)}, By: "test"})
	require.NoError(t, err)
	desc, err = handle.Describe(ctx)
	require.NoError(t, err)
	assert.True(t, desc.Schedule.Spec.StartAt.IsZero(), "a heartbeat set again starts now")
}
