package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// These tests drive the session's paths that the older tests do not (the
// gate, every command, claim codes), each recording its history for the
// replay test. They run in parallel with each other: they wait on the
// server, not on the CPU.

// command posts text from sender in chat and returns the session's answer.
func (s *stack) command(events *eventStream, chat, id, sender, text string) string {
	s.t.Helper()
	body := fmt.Sprintf(`{"message_id":%q,"sender_id":%q,"text":%q}`, id, sender, text)
	code, resp := s.post(chat, body)
	require.Equal(s.t, http.StatusAccepted, code, resp)
	seen := events.collectUntil(s.t, 30*time.Second, isReplyTo(id))
	return seen[len(seen)-1].Text
}

// clearsAll is true once each of ids has had its reaction cleared.
func clearsAll(ids ...string) func(sseEvent) bool {
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	return func(ev sseEvent) bool {
		if isClearOf(ev.MessageID)(ev) {
			delete(left, ev.MessageID)
		}
		return len(left) == 0
	}
}

// gateModel answers the gate's prompt: forward a question, skip the rest.
// Every other prompt gets the test model's echo.
type gateModel struct{ testModel }

func (m *gateModel) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	if !strings.HasPrefix(p.System, "You decide whether") {
		return m.testModel.Complete(ctx, p)
	}
	if strings.Contains(p.Messages[len(p.Messages)-1].Text, "?") {
		return models.Completion{Text: `{"forward": true, "reason": "a question"}`}, nil
	}
	return models.Completion{Text: `{"forward": false, "reason": "chatter"}`}, nil
}

func TestGatedGroupChatAsksTheGateModel(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.GateModel = "test/gate"
	// The gate skips a batch it cannot ask within its timeout (by design);
	// on a loaded machine the 2.5 s default can pass before a worker picks
	// the activity up, and this test is about the answer, not the timeout.
	cfg.GateTimeout = 30 * time.Second
	cfg.Owners = []string{"webchat:boss"}
	s := startStack(t, cfg)
	s.startWorker(&gateModel{})
	chat := uniqueChat("gated")
	events := subscribe(t, s.baseURL, chat)

	assert.Equal(t, "Activation: smart. Owners change it with /activation mention|smart|gated|always.",
		s.command(events, chat, "a1", "alice", "/activation"))
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", s.command(events, chat, "a2", "alice", "/activation gated"))
	assert.Equal(t, "Activation for this chat: gated.", s.command(events, chat, "a3", "boss", "/activation gated"))

	code, _ := s.post(chat, `{"message_id":"g1","sender_id":"alice","sender_name":"Alice","chat_type":"group","text":"nice weather today"}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool { return s.state(chat).Counters.Observed == 1 }, 30*time.Second, 50*time.Millisecond,
		"the gate skips chatter, which is kept as context")
	code, _ = s.post(chat, `{"message_id":"g2","sender_id":"bob","sender_name":"Bob","chat_type":"group","text":"does anyone know the time?"}`)
	require.Equal(t, http.StatusAccepted, code)

	seen := events.collectUntil(t, 30*time.Second, isClearOf("g2"))
	var replies []sseEvent
	for _, ev := range seen {
		if ev.Type == "message" {
			replies = append(replies, ev)
		}
	}
	require.Len(t, replies, 1, "the question is answered once; the chatter never")
	assert.Contains(t, replies[0].Text, "does anyone know the time?")
	assert.Empty(t, replies[0].ReplyTo, "a gate-forwarded batch anchors no reply")
	for _, ev := range seen {
		assert.False(t, ev.Type == "reaction" && ev.MessageID == "g1", "the skipped chatter shows no reaction: %+v", ev)
	}
	snap := s.state(chat)
	assert.Equal(t, 1, snap.Counters.Gated)
	assert.Equal(t, 1, snap.TurnSeq)
	recordHistory(t, s.client, chat, "gate_activation")
}

func TestEveryCommandIsAnsweredWithoutTheModel(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ModelAllow = []string{"openai/gpt-test"}
	s := startStack(t, cfg)
	model := &testModel{started: make(chan string, 1)}
	s.startWorker(model)
	chat := uniqueChat("commands")
	events := subscribe(t, s.baseURL, chat)

	for i, c := range []struct{ text, want string }{
		{"/status", "Session session:webchat:" + chat + "\nModel: demo/echo\n"},
		{"/model", "Model: demo/echo. Chain: demo/echo. Change it with /model provider/model."},
		{"/model openai/gpt-costly", "⚠️ /model may choose only demo/echo, openai/gpt-test here; owners may choose any model."},
		{"/model openai/gpt-test", "Model for this chat: openai/gpt-test (no fallback while it is chosen; /model default undoes it)."},
		{"/model default", "Model back to the default chain: demo/echo."},
		{"/queue", "Queue settings: "},
		{"/queue steer debounce:300ms cap:5", "⚠️ Only owners may set /queue debounce:300ms cap:5 in this chat"},
		{"/queue default", "Queue settings back to the defaults: "},
		{"/new", pipeline.NewTranscriptReply},
		{"/reset", pipeline.NewTranscriptReply},
		{"/approve p9", `⚠️ unknown proposal "p9" in session:webchat:` + chat},
		{"/reject", "⚠️ use /reject <proposal id> [reason]"},
		{"/activation sometimes", "⚠️ use /activation mention, smart, gated or always"},
	} {
		id := fmt.Sprintf("c%d", i)
		assert.True(t, strings.HasPrefix(s.command(events, chat, id, "alice", c.text), c.want), "%s answers %q", c.text, c.want)
	}
	snap := s.state(chat)
	assert.Empty(t, snap.ModelOverride, "/model default undid /model")
	assert.Equal(t, 13, snap.Counters.Commands)
	assert.Zero(t, snap.TurnSeq, "no command reached the model")
	select {
	case text := <-model.started:
		t.Errorf("the model was asked %q", text)
	default:
	}
	recordHistory(t, s.client, chat, "commands")
}

func TestStopAbortsTheRunningTurnAndDropsWhatWaits(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Debounce = 5 * time.Second // the second message is still in its window at /stop
	s := startStack(t, cfg)
	model := holding("long task", nil)
	s.startWorker(model)
	chat := uniqueChat("stop")
	events := subscribe(t, s.baseURL, chat)

	s.runTurnAndBufferOne(model, chat, "s1", "s2")
	code, _ := s.post(chat, `{"message_id":"s3","sender_id":"alice","text":"/stop"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, clearsAll("s1", "s2", "s3"))
	assert.Equal(t, 1, countMessages(seen), "only /stop is answered: %v", summarize(seen, "s1"))
	for _, ev := range seen {
		if ev.Type == "message" {
			assert.Equal(t, pipeline.AbortedReply, ev.Text)
		}
	}
	snap := s.state(chat)
	assert.Equal(t, 1, snap.Counters.Aborted)
	assert.Equal(t, 1, snap.Counters.Dropped, "the buffered message is dropped")
	assert.Empty(t, snap.Buffers)
	assert.Nil(t, snap.Active)

	// The next message starts afresh.
	code, _ = s.post(chat, `{"message_id":"s4","sender_id":"alice","text":"/queue followup hello again"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen = events.collectUntil(t, 30*time.Second, isReplyTo("s4"))
	assert.Contains(t, seen[len(seen)-1].Text, "hello again")
	events.collectUntil(t, 30*time.Second, isClearOf("s4"))
	recordHistory(t, s.client, chat, "stop")
}

// runTurnAndBufferOne starts a turn on "long task", held by model, and
// posts a second message, which waits in its debounce window.
func (s *stack) runTurnAndBufferOne(model *testModel, chat, turnID, bufferedID string) {
	s.t.Helper()
	// A directive skips the debounce window, so the turn starts at once.
	code, _ := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":"alice","text":"/queue followup long task"}`, turnID))
	require.Equal(s.t, http.StatusAccepted, code)
	model.waitStarted(s.t, "long task")
	code, _ = s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":"alice","text":"and then this"}`, bufferedID))
	require.Equal(s.t, http.StatusAccepted, code)
	require.Eventually(s.t, func() bool { return len(s.state(chat).Buffers) == 1 }, 30*time.Second, 50*time.Millisecond,
		"%s waits in its debounce window", bufferedID)
}

// startClaimable starts a stack with no owner and one live claim code,
// and a web chat named after name to send it in.
func startClaimable(t *testing.T, name string) (s *stack, cfg Config, code, chat string, events *eventStream) {
	t.Helper()
	cfg = testConfig(t)
	db, err := store.Open(context.Background(), cfg.StoreDSN)
	require.NoError(t, err)
	code, err = db.NewClaimCode(context.Background(), time.Hour)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	s = startStack(t, cfg)
	s.startWorker(&testModel{})
	chat = uniqueChat(name)
	return s, cfg, code, chat, subscribe(t, s.baseURL, chat)
}

func TestClaimCodeMakesTheSenderAnOwner(t *testing.T) {
	t.Parallel()
	s, _, code, chat, events := startClaimable(t, "claim")

	assert.Equal(t, "⚠️ Only owners may change the activation mode.", s.command(events, chat, "k1", "alice", "/activation always"))
	assert.Equal(t, "You (webchat:alice) are now an owner of this agent.", s.command(events, chat, "k2", "alice", code))
	assert.Equal(t, "Activation for this chat: always.", s.command(events, chat, "k3", "alice", "/activation always"))
	assert.Equal(t, "That claim code is not valid, or was already used.", s.command(events, chat, "k4", "bob", code))
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", s.command(events, chat, "k5", "bob", "/activation mention"))
	assert.Equal(t, "always", s.state(chat).Activation)
	events.collectUntil(t, 30*time.Second, isClearOf("k5"))
	recordHistory(t, s.client, chat, "claim")
}

// A claim code a bot sends (a bridge relaying someone, another agent)
// makes no owner: the bot speaks for others. The code is burnt, since the
// chat it came from has seen it, so nobody there claims it after.
func TestClaimCodeSentByABotMakesNoOwnerAndBurnsTheCode(t *testing.T) {
	t.Parallel()
	s, cfg, code, chat, events := startClaimable(t, "claim-bot")

	status, resp := s.post(chat, fmt.Sprintf(`{"message_id":"b1","sender_id":"bridge","sender_is_bot":true,"text":%q}`, code))
	require.Equal(t, http.StatusAccepted, status, resp)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("b1"))
	assert.Equal(t, botClaimRefusal, seen[len(seen)-1].Text)
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", s.command(events, chat, "b2", "bridge", "/activation always"),
		"the bot is no owner")
	assert.Equal(t, "That claim code is not valid, or was already used.", s.command(events, chat, "b3", "alice", code),
		"nobody who saw the code claims it after")
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", s.command(events, chat, "b4", "alice", "/activation always"))
	events.collectUntil(t, 30*time.Second, isClearOf("b4"))
	db, err := store.Open(context.Background(), cfg.StoreDSN)
	require.NoError(t, err)
	defer db.Close()
	owners, err := db.Owners(context.Background())
	require.NoError(t, err)
	assert.Empty(t, owners)
	recordHistory(t, s.client, chat, "claim_by_bot")
}

// botClaimRefusal is the session's answer to a claim code a bot sent.
const botClaimRefusal = "A bot cannot become an owner, and that code no longer works: this chat has seen it. " +
	"Restart the worker with no REPLYFLOW_OWNERS for a new code, and send it to the agent from your own account, in a direct message."

// A code printed by a start without owners makes no stranger an owner
// once the agent restarts with REPLYFLOW_OWNERS set.
func TestStaleClaimCodeMakesNoOwnerAfterARestartWithOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testConfig(t)
	_, db, code, err := workerSide(ctx, cfg, slog.Default())
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NotEmpty(t, code, "a start without owners prints a claim code")

	cfg.Owners = []string{"webchat:boss"}
	_, db, again, err := workerSide(ctx, cfg, slog.Default())
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.Empty(t, again, "a start with owners prints none")
	s := startStack(t, cfg)
	s.startWorker(&testModel{})
	chat := uniqueChat("stale-claim")
	events := subscribe(t, s.baseURL, chat)

	assert.Equal(t, "That claim code is not valid, or was already used.", s.command(events, chat, "m1", "mallory", code))
	assert.Equal(t, "⚠️ Only owners may change the activation mode.", s.command(events, chat, "m2", "mallory", "/activation always"))
	db, err = store.Open(ctx, cfg.StoreDSN)
	require.NoError(t, err)
	defer db.Close()
	owners, err := db.Owners(ctx)
	require.NoError(t, err)
	assert.Empty(t, owners, "the stranger is no owner")
}
