package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// waitReloaded waits until the worker started with cfg has told every
// open session to reload: it records its settings' fingerprint only then.
func waitReloaded(t *testing.T, cfg Config) {
	t.Helper()
	want, err := cfg.sessionSettingsFingerprint()
	require.NoError(t, err)
	db, err := store.Open(context.Background(), cfg.StoreDSN)
	require.NoError(t, err)
	defer db.Close()
	require.Eventually(t, func() bool {
		got, err := db.SettingsFingerprint(context.Background(), cfg.TaskQueue)
		return err == nil && got == want
	}, time.Minute, 20*time.Millisecond, "the worker records its session settings once every open session was told to reload")
}

// A sender the new allow list leaves out is denied at their next message
// in the chat they already had open: the worker that starts with the
// narrower list makes the open session reload it.
func TestAWorkerRestartedWithANarrowerAllowListDeniesARemovedSenderInAnOpenChat(t *testing.T) {
	cfg := testConfig(t)
	require.Equal(t, []string{"*"}, cfg.AllowFrom, "anyone may talk to the agent at first")
	s := startStack(t, cfg)
	model := &testModel{started: make(chan string, 10)}
	stop := s.startWorker(model)
	waitReloaded(t, s.cfg)
	chat := uniqueChat("reload-allow")
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"b1","sender_id":"bob","text":"first from bob"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("b1"))
	model.waitStarted(t, "first from bob")

	// Two workers start with the new list: both may tell the session to
	// reload, which it may do twice.
	stop()
	s.cfg.AllowFrom = []string{"webchat:alice"}
	s.startWorker(model)
	s.startWorker(model)
	waitReloaded(t, s.cfg)

	code, body = s.post(chat, `{"message_id":"b2","sender_id":"bob","text":"bob again"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	code, body = s.post(chat, `{"message_id":"a1","sender_id":"alice","text":"alice here"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("a1"))
	for _, ev := range seen {
		assert.False(t, isReplyTo("b2")(ev), "bob, no longer allowed, got an answer: %+v", ev)
	}
	for len(model.started) > 0 {
		assert.NotEqual(t, "bob again", <-model.started, "bob's message reached the model")
	}
	snap := s.state(chat)
	assert.Equal(t, "b2", snap.LastDenied)
	assert.Equal(t, 1, snap.Counters.Denied)
	assert.Equal(t, []string{"webchat:alice"}, snap.Settings.AllowFrom)
	reloads := reloadSignals(t, s, chat)
	assert.True(t, reloads == 1 || reloads == 2, "one reload per worker at most, got %d", reloads)
	recordHistory(t, s.client, chat, "reload_allow_list")
}

// A new model chain is used by an open chat's next turn, without the chat
// doing anything.
func TestAWorkerRestartedWithANewModelAnswersAnOpenChatsNextTurnWithIt(t *testing.T) {
	cfg := testConfig(t)
	s := startStack(t, cfg)
	stop := s.startWorker(&testModel{})
	chat := uniqueChat("reload-model")
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"which model?"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("m1"))
	require.Equal(t, "demo/echo", s.state(chat).LastTurn.Model)

	stop()
	s.cfg.Model = "test/newer"
	s.startWorker(&testModel{})
	waitReloaded(t, s.cfg)

	code, body = s.post(chat, `{"message_id":"m2","sender_id":"alice","text":"and now?"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("m2"))
	snap := s.state(chat)
	assert.Equal(t, "test/newer", snap.LastTurn.Model, "the open chat's next turn asks the new model")
	assert.Equal(t, []string{"test/newer"}, snap.Settings.Models)
	recordHistory(t, s.client, chat, "reload_model")
}

// `replyflow reload` signals the sessions it names, or every open session
// of the task queue with --all, and says how many; a session that is not
// running is an error that says so.
func TestReloadVerb(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	s := startStack(t, testConfig(t))
	s.startWorker(nil)
	waitReloaded(t, s.cfg) // the worker's own reload at start is done
	one, two := uniqueChat("reload-one"), uniqueChat("reload-two")
	events := map[string]*eventStream{}
	for _, chat := range []string{one, two} {
		events[chat] = subscribe(t, s.baseURL, chat)
		code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"hello"}`)
		require.Equal(t, http.StatusAccepted, code, body)
		events[chat].collectUntil(t, 30*time.Second, isReplyTo("m1"))
	}
	ctx := context.Background()

	var out bytes.Buffer
	require.NoError(t, reloadCommand(ctx, s.cfg, []string{"--reason", "owner removed", "webchat:" + one}, &out, s.logger))
	assert.Equal(t, "Reload sent to session:webchat:"+one+": it reads its settings again before its next message.\n", out.String())
	assert.Equal(t, 1, reloadSignals(t, s, one))
	assert.Equal(t, 0, reloadSignals(t, s, two))

	// Visibility shows both sessions open (eventually consistent).
	require.Eventually(t, func() bool {
		out.Reset()
		return reloadCommand(ctx, s.cfg, []string{"--all", "--rate", "100"}, &out, s.logger) == nil &&
			bytes.Contains(out.Bytes(), []byte("Reload sent to 2 open session(s) on task queue "+s.cfg.TaskQueue))
	}, 10*time.Second, 200*time.Millisecond, "reload --all reaches both open sessions: %s", &out)
	assert.GreaterOrEqual(t, reloadSignals(t, s, two), 1)

	err := reloadCommand(ctx, s.cfg, []string{"webchat:never-opened"}, &out, s.logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "session:webchat:never-opened is not running")
	require.Error(t, reloadCommand(ctx, s.cfg, []string{"--all", "webchat:" + one}, &out, s.logger), "--all or sessions, not both")
	require.Error(t, reloadCommand(ctx, s.cfg, nil, &out, s.logger), "nothing named")

	// The sessions still answer after their reloads.
	code, body := s.post(one, `{"message_id":"m2","sender_id":"alice","text":"still there?"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events[one].collectUntil(t, 30*time.Second, isReplyTo("m2"))
}

// reloadSignals counts the reload signals in a web chat session's current
// run.
func reloadSignals(t *testing.T, s *stack, chat string) int {
	t.Helper()
	id := pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()
	iter := s.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == workflows.SignalReload {
			n++
		}
	}
	return n
}
