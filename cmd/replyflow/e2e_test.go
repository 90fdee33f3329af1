package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/webchat"
	"github.com/replyflow/replyflow/cmd/internal/devserver"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// These tests run the real worker and gateway against a real Temporal dev
// server (the CLI that `make test` builds into ./bin) and talk to them only
// over the web chat's HTTP API, as a user's program would.

var (
	temporalServer *testsuite.DevServer
	recordTo       = flag.String("record-histories", "", "write the histories of these tests as gzip-compressed JSON into this folder (for the replay test)")
	// queueSeq numbers what must be new to the dev server: task queues,
	// chats (uniqueChat), bots.
	queueSeq atomic.Int64
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(plantSecretEnv) != "" {
		plantSecretAndExit()
	}
	// Whatever logs through the standard loggers (log, and slog's
	// default, which writes through log) is scanned for secrets too.
	log.SetOutput(scanWriter{scanner: logScan, owner: "the log package (shared)", forward: os.Stderr})
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	if _, err := os.Stat(cli); err != nil {
		fmt.Fprintf(os.Stderr, "integration tests need the Temporal CLI at %s: run `make test` (it builds it), or set REPLYFLOW_TEST_TEMPORAL_CLI\n", cli)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	// Sessions are told to continue as new after a few turns, so every
	// test also crosses continue-as-new.
	extra := append([]string{"--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=60"}, devserver.Args()...)
	var err error
	temporalServer, err = testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  cli,
		ClientOptions: &client.Options{Namespace: "default", Logger: tlog.NewStructuredLogger(sharedClientLogger())},
		LogLevel:      "error",
		ExtraArgs:     extra,
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the Temporal dev server:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = temporalServer.Stop()
	os.Exit(withLeakCheck(code))
}

// uniqueChat is a chat ID that no other chat of this test process has:
// prefix, a dash and a number. The dev server lives as long as the
// process and keeps every session, across tests and across the runs of
// one test (go test -count=N), so a fixed ID would reach a session an
// earlier run left, on a task queue no worker polls any more, holding
// that run's message IDs as already seen.
func uniqueChat(prefix string) string { return fmt.Sprintf("%s-%d", prefix, queueSeq.Add(1)) }

// uniqueTelegramID is, like uniqueChat, a Telegram chat ID (or user ID)
// that no other of this test process has; negated, a group's. It is
// above the fixed IDs of the tests' people (tgAlice and the others).
func uniqueTelegramID() int64 { return 10_000_000 + queueSeq.Add(1) }

// uniqueSlackChannel is, like uniqueChat, a Slack channel ID that no other
// of this test process has: kind ("C" a channel, "D" a direct message,
// or a longer prefix) and a number, in Slack's capitals and digits.
func uniqueSlackChannel(kind string) string {
	return kind + strings.ToUpper(strconv.FormatInt(queueSeq.Add(1), 36))
}

// stack is one worker and one gateway on their own task queue.
type stack struct {
	t       *testing.T
	cfg     Config
	client  client.Client
	baseURL string
	logger  *slog.Logger
	// stopGateway stops the running gateway (once).
	stopGateway func()
}

func testConfig(t *testing.T) Config {
	cfg, err := readConfig("replyflow_test_unset")
	require.NoError(t, err, "defaults must parse")
	cfg.TaskQueue = fmt.Sprintf("test-%s-%d", t.Name(), queueSeq.Add(1))
	cfg.ReactionClearDelay = 2 * time.Second
	cfg.Debounce = 200 * time.Millisecond
	cfg.ReactionCoalesce = 100 * time.Millisecond
	cfg.DemoModelDelay = 0
	cfg.TypingInterval = time.Second
	cfg.TurnHeartbeatTimeout = 5 * time.Second
	webchatOf(cfg).BotToken = "test-bot-token"
	registerSecret("web chat bot token", webchatOf(cfg).BotToken)
	// The tests post as any sender_id, as none mode lets a loopback
	// client do; e2e_webauth_test.go runs token mode.
	webchatOf(cfg).Auth = "none"
	cfg.StoreDSN = filepath.Join(t.TempDir(), "replyflow.db")
	// Each test has a task queue of its own, and a deployment version
	// holds at most 100: these workers run unversioned (the versioned
	// ones run in cmd/replyflow-chaos, where the rolling upgrade is).
	cfg.WorkerVersioning = false
	require.NoError(t, cfg.validate())
	return cfg
}

// webchatOf and telegramOf are cfg's settings of the web chat and Telegram.
func webchatOf(cfg Config) *webchat.Platform   { return platformOf[*webchat.Platform](cfg) }
func telegramOf(cfg Config) *telegram.Platform { return platformOf[*telegram.Platform](cfg) }

func platformOf[P adapters.Platform](cfg Config) P {
	for _, p := range cfg.Platforms {
		if mine, ok := p.(P); ok {
			return mine
		}
	}
	panic("the platform is not registered")
}

func startStack(t *testing.T, cfg Config) *stack {
	return startStackOn(t, cfg, temporalServer.Client())
}

// startStackOn starts the gateway against the server c talks to.
func startStackOn(t *testing.T, cfg Config, c client.Client) *stack {
	// restartGateway listens on this address again: it is drawn where no
	// other process is handed it meanwhile.
	ln, err := net.Listen("tcp", freeAddr(t))
	require.NoError(t, err)
	cfg = cfg.withOwnPlatforms()
	webchatOf(cfg).URL = "http://" + ln.Addr().String()
	// Whatever secret the test configured, its logs must not show it;
	// cfg.LogLevel "debug" scans the debug lines too.
	registerConfigSecrets(cfg)
	s := &stack{t: t, cfg: cfg, client: c, baseURL: webchatOf(cfg).URL, logger: testLogger(t, cfg.LogLevel)}
	s.startGateway(ln)
	return s
}

// startGateway serves the gateway on ln until stopGateway or the test ends.
func (s *stack) startGateway(ln net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveGateway(ctx, ln, s.client, s.cfg, s.logger) }()
	var once sync.Once
	s.stopGateway = func() {
		once.Do(func() {
			cancel()
			assert.NoError(s.t, <-done)
		})
	}
	s.t.Cleanup(s.stopGateway)
}

// restartGateway listens again on the gateway's address.
func (s *stack) restartGateway() {
	// A kept-alive connection to the stopped gateway may not have seen
	// its close yet; a POST on it fails ("server closed idle connection")
	// and is not retried, so the next request must dial the new one.
	http.DefaultClient.CloseIdleConnections()
	ln, err := net.Listen("tcp", strings.TrimPrefix(s.baseURL, "http://"))
	require.NoError(s.t, err)
	s.startGateway(ln)
}

// testModel answers "You said: <text>" like the demo model. hold, when
// set, returns a channel the answer waits for (nil: wait until cancelled);
// started, when set, receives each step's text.
type testModel struct {
	hold    func(text string) <-chan struct{}
	started chan string
}

func (*testModel) Name() string { return "test/model" }

// lastUserText is the text of the prompt's last user message, without
// its envelope.
func lastUserText(p models.Prompt) string {
	var text string
	for _, msg := range p.Messages {
		if msg.Role == "user" {
			text = pipeline.StripEnvelope(msg.Text)
		}
	}
	return text
}

func (m *testModel) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	text := lastUserText(p)
	if m.started != nil {
		select {
		case m.started <- text:
		default:
		}
	}
	if m.hold != nil {
		select {
		case <-m.hold(text):
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		}
	}
	return models.Completion{Text: "You said: " + text}, nil
}

// fixedModels answers every model name with one model.
type fixedModels struct{ models.Model }

func (f fixedModels) Get(string) (models.Model, error) { return f.Model, nil }

func (m *testModel) waitStarted(t *testing.T, text string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-m.started:
			if got == text {
				return
			}
		case <-deadline:
			t.Fatalf("the model never started a turn for %q", text)
		}
	}
}

// startWorker runs a worker with model (nil: the configured one) until the
// returned stop function is called or the test ends.
func (s *stack) startWorker(model models.Model) (stop func()) {
	return s.startWorkerWith(func(acts *activities.Activities) {
		if model != nil {
			acts.Models = fixedModels{model}
		}
	})
}

// startWorkerWith runs a worker with the activities adjust changed.
func (s *stack) startWorkerWith(adjust func(*activities.Activities)) (stop func()) {
	acts, db, err := newActivities(context.Background(), s.cfg, s.logger)
	require.NoError(s.t, err)
	s.t.Cleanup(func() { db.Close() })
	adjust(acts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runWorker(ctx, s.client, s.cfg, acts) }()
	var stopped atomic.Bool
	stop = func() {
		if stopped.CompareAndSwap(false, true) {
			cancel()
			require.NoError(s.t, <-done)
		}
	}
	s.t.Cleanup(stop)
	return stop
}

func (s *stack) post(chat, body string) (int, string) {
	resp, err := http.Post(s.baseURL+"/api/chats/"+chat+"/messages", "application/json", strings.NewReader(body))
	require.NoError(s.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func (s *stack) state(chat string) workflows.Snapshot {
	return s.stateOf(pipeline.SessionKey{Channel: "webchat", Chat: chat})
}

// stateOf queries the session's state. A query waits for the session's
// worker to take a workflow task; on a machine loaded by the whole suite
// that can take seconds, so the deadline is the suite's usual 30 s.
func (s *stack) stateOf(key pipeline.SessionKey) workflows.Snapshot {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := s.client.QueryWorkflow(ctx, key.WorkflowID(), "", workflows.QueryState)
	require.NoError(s.t, err)
	var snap workflows.Snapshot
	require.NoError(s.t, v.Get(&snap))
	return snap
}

func TestMessageGetsReplyAndFullReactionLifecycle(t *testing.T) {
	s := startStack(t, testConfig(t))
	release := make(chan struct{})
	s.startWorker(&testModel{hold: func(string) <-chan struct{} { return release }})
	chat := uniqueChat("lifecycle")
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"m1","sender_id":"alice","sender_name":"Alice","text":"hello there"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	assert.JSONEq(t, `{"message_id":"m1"}`, body)

	// The model answers only once ✍️ was shown, as a slow model would.
	seen := events.collectUntil(t, 30*time.Second, isReaction("m1", "✍️"))
	close(release)
	seen = append(seen, events.collectUntil(t, 30*time.Second, isClearOf("m1"))...)
	assert.Equal(t, []string{"reaction m1 👀", "reaction m1 ✍️", "message You said: hello there", "reaction m1 ✅", "reaction m1 "},
		summarize(seen, "m1"))
	assert.Contains(t, types(seen), "typing", "typing is shown while the model works")

	snap := s.state(chat)
	assert.Equal(t, workflows.StatusIdle, snap.Status)
	assert.Equal(t, 1, snap.TurnSeq)
	assert.Equal(t, "demo/echo", snap.LastTurn.Model, "the chain's model answered")
	assert.Empty(t, snap.Reactions, "no reaction is left behind")
	assertSearchAttributes(t, s.client, chat)
	recordHistory(t, s.client, chat, "simple_turn")
}

func TestRepeatedMessageIDIsAnsweredOnce(t *testing.T) {
	s := startStack(t, testConfig(t))
	s.startWorker(nil)
	chat := uniqueChat("dedupe")
	events := subscribe(t, s.baseURL, chat)

	for range 3 {
		code, body := s.post(chat, `{"message_id":"same","sender_id":"alice","text":"only once please"}`)
		require.Equal(t, http.StatusAccepted, code, body)
	}
	seen := events.collectUntil(t, 30*time.Second, isClearOf("same"))
	assert.Equal(t, 1, countMessages(seen))
	snap := s.state(chat)
	assert.Equal(t, 1, snap.TurnSeq, "three deliveries of one message_id make one turn")
	assert.Len(t, snap.Deliveries, 1)
}

func TestBadRequestsAreRefusedWithAReason(t *testing.T) {
	s := startStack(t, testConfig(t))
	chat := uniqueChat("bad")
	for _, c := range []struct{ body, reason string }{
		{`{"sender_id":"a"`, "not a valid message"},
		{`{"text":"hi"}`, "sender_id is missing"},
		{`{"sender_id":"a"}`, "text is missing"},
		{`{"sender_id":"a","text":"hi","thread_id":"has space"}`, "thread_id contains"},
	} {
		code, body := s.post(chat, c.body)
		assert.Equal(t, http.StatusBadRequest, code, c.body)
		assert.Contains(t, body, c.reason, c.body)
	}
}

func TestTurnSurvivesWorkerRestart(t *testing.T) {
	cfg := testConfig(t)
	cfg.ShutdownGrace = 0 // stopped as a crash would: the turn is cut off
	s := startStack(t, cfg)
	model := &testModel{started: make(chan string, 1), hold: func(string) <-chan struct{} { return nil }}
	stopFirst := s.startWorker(model)
	chat := uniqueChat("restart")
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"r1","sender_id":"alice","text":"survive this"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	model.waitStarted(t, "survive this")
	stopFirst()
	s.startWorker(nil)

	seen := events.collectUntil(t, 60*time.Second, isClearOf("r1"))
	assert.Equal(t, 1, countMessages(seen), "exactly one reply after the restart")
	assert.Contains(t, summarize(seen, "r1"), "message You said: survive this")
	snap := s.state(chat)
	assert.Equal(t, 1, snap.TurnSeq)
	assert.Len(t, snap.Deliveries, 1)
	assert.Empty(t, snap.Reactions, "the reaction is still cleared")
	recordHistory(t, s.client, chat, "worker_restart")
}

func assertSearchAttributes(t *testing.T, c client.Client, chat string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()
	query := fmt.Sprintf(`WorkflowId = %q AND ReplyflowChannel = "webchat" AND ReplyflowChat = %q AND ReplyflowState = "idle"`, id, chat)
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, listRequest(query))
		return err == nil && len(resp.Executions) == 1
	}, 10*time.Second, 100*time.Millisecond, "visibility finds the session by %s", query)
}
