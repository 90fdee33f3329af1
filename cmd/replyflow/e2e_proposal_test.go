package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// payingModel asks to call "pay" until the prompt holds the call's result,
// then answers with what came back.
type payingModel struct{}

func (payingModel) Name() string { return "test/paying" }

func (payingModel) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	for _, m := range p.Messages {
		if m.Role == "tool" {
			return models.Completion{Text: "done: " + m.Text}, nil
		}
	}
	return models.Completion{ToolCalls: []pipeline.ToolCall{{ID: "call-1", Name: "pay", Arguments: `{"amount":5,"to":"bob"}`}}}, nil
}

// payServer is the fake HTTP tool; it counts the calls it gets.
func payServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.WriteString(w, `{"paid":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func proposalConfig(t *testing.T, toolURL string) Config {
	cfg := testConfig(t)
	// The fake tool is on loopback, which a tool must be allowed to reach.
	defs, _ := json.Marshal([]activities.ToolDef{{Name: "pay", Description: "pay someone", URL: toolURL, RequiresApproval: true, AllowPrivate: true}})
	cfg.ToolsFile = filepath.Join(t.TempDir(), "tools.json")
	require.NoError(t, os.WriteFile(cfg.ToolsFile, defs, 0o644))
	cfg.Owners = []string{"webchat:boss"}
	return cfg
}

// TestRequesterCannotApproveTheirOwnProposalByDefault is the attack of a
// chat member who asks for a gated tool and presses Approve: with the
// default settings only owners and operators decide, so the tool does not
// run until the owner approves.
func TestRequesterCannotApproveTheirOwnProposalByDefault(t *testing.T) {
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	s := startStack(t, cfg)
	s.startWorker(payingModel{})
	chat := uniqueChat("self-approve")
	events := subscribe(t, s.baseURL, chat)

	code, _ := s.post(chat, `{"message_id":"self1","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, isButtonsMessage)
	proposalMsg := seen[len(seen)-1].MessageID

	assert.Equal(t, http.StatusAccepted, s.press(chat, "alice", proposalMsg, "approve:p1"))
	refusal := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.Contains(ev.Text, "not allowed") })
	assert.Contains(t, refusal[len(refusal)-1].Text, "webchat:alice is not allowed to decide proposal p1: only owners may")
	assert.Zero(t, calls.Load(), "the requester's own approval runs nothing")
	assert.Equal(t, workflows.StatusWaitingUser, s.state(chat).Status, "the proposal still waits for an owner")

	assert.Equal(t, http.StatusAccepted, s.press(chat, "boss", proposalMsg, "approve:p1"))
	events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Equal(t, int32(1), calls.Load(), "the owner's approval runs it once")
}

func (s *stack) press(chat, sender, messageID, action string) int {
	body := fmt.Sprintf(`{"sender_id":%q,"message_id":%q,"action":%q}`, sender, messageID, action)
	resp, err := http.Post(s.baseURL+"/api/chats/"+chat+"/actions", "application/json", strings.NewReader(body))
	require.NoError(s.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func isButtonsMessage(ev sseEvent) bool {
	return ev.Type == "message" && strings.Contains(ev.Text, "Approval needed")
}

func TestProposalApprovedByButtonSurvivesAWorkerRestart(t *testing.T) {
	tool, calls := payServer(t)
	s := startStack(t, proposalConfig(t, tool.URL))
	stopFirst := s.startWorker(payingModel{})
	chat := uniqueChat("approve")
	events := subscribe(t, s.baseURL, chat)

	code, _ := s.post(chat, `{"message_id":"pay1","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, isButtonsMessage)
	proposalMsg := seen[len(seen)-1].MessageID
	events.collectUntil(t, 30*time.Second, isReaction("pay1", "⏳"))
	assert.Equal(t, workflows.StatusWaitingUser, s.state(chat).Status)

	stopFirst()
	s.startWorker(payingModel{})
	assert.Equal(t, http.StatusAccepted, s.press(chat, "mallory", proposalMsg, "approve:p1"))
	refusal := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.Contains(ev.Text, "not allowed") })
	assert.Contains(t, refusal[len(refusal)-1].Text, "webchat:mallory is not allowed to decide proposal p1")
	assert.Zero(t, calls.Load(), "a refused press runs nothing")

	assert.Equal(t, http.StatusAccepted, s.press(chat, "boss", proposalMsg, "approve:p1"))
	assert.Equal(t, http.StatusAccepted, s.press(chat, "boss", proposalMsg, "approve:p1"), "a double click")
	seen = events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Equal(t, `done: {"paid":true}`, seen[len(seen)-1].Text)
	assert.Equal(t, int32(1), calls.Load(), "an approved tool runs exactly once")
	edits := 0
	for _, ev := range seen {
		if ev.Type == "edit" {
			edits++
			assert.Equal(t, proposalMsg, ev.MessageID)
			assert.Contains(t, ev.Text, "✅ Approved by webchat:boss [p1]")
		}
	}
	assert.Equal(t, 1, edits, "the proposal message shows the outcome")
	events.collectUntil(t, 30*time.Second, isClearOf("pay1"))
	recordHistory(t, s.client, chat, "proposal_approved")
}

func TestProposalRejectedFromTheCLI(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	tool, calls := payServer(t)
	s := startStack(t, proposalConfig(t, tool.URL))
	s.startWorker(payingModel{})
	chat := uniqueChat("reject")
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"pay2","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	events.collectUntil(t, 30*time.Second, isButtonsMessage)

	var out bytes.Buffer
	err := decideCommand(context.Background(), s.cfg, "approve", []string{"webchat:" + chat, "p7"}, &out, s.logger)
	require.Error(t, err, "an unknown proposal is refused at once")
	assert.Contains(t, err.Error(), `unknown proposal "p7"`)

	require.NoError(t, decideCommand(context.Background(), s.cfg, "reject", []string{"--by", "carol", "--reason", "over budget", "webchat:" + chat, "p1"}, &out, s.logger))
	assert.Contains(t, out.String(), "Proposal p1 rejected by operator:carol.")
	err = decideCommand(context.Background(), s.cfg, "approve", []string{"webchat:" + chat, "p1"}, &out, s.logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already rejected by operator:carol")

	seen := events.collectUntil(t, 30*time.Second, isClearOf("pay2"))
	for _, ev := range seen {
		if ev.Type == "edit" {
			assert.Contains(t, ev.Text, "Reason: over budget")
		}
	}
	assert.Zero(t, calls.Load(), "a rejected tool never runs")
	assert.Zero(t, s.state(chat).Counters.Dropped)
	recordHistory(t, s.client, chat, "proposal_rejected_update")
}

func TestPendingProposalSurvivesAGatewayRestart(t *testing.T) {
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.RequesterMayDecide = true
	s := startStack(t, cfg)
	s.startWorker(payingModel{})
	chat := uniqueChat("gateway-restart")
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"pay3","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	events.collectUntil(t, 30*time.Second, isButtonsMessage)

	s.stopGateway()
	s.restartGateway()
	events = subscribe(t, s.baseURL, chat)
	code, _ = s.post(chat, `{"message_id":"dec3","sender_id":"alice","text":"/approve p1"}`)
	require.Equal(t, http.StatusAccepted, code, "the requester may decide here, by text command")
	seen := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Contains(t, summarize(seen, "dec3"), "message Proposal p1 approved by webchat:alice.")
	assert.Equal(t, int32(1), calls.Load())
	recordHistory(t, s.client, chat, "proposal_approved_text")
}

// TestPendingProposalSurvivesADevServerRestart runs its own dev server on a
// database file, stops it while a proposal waits, starts it again on the
// same file, and approves from the CLI.
func TestPendingProposalSurvivesADevServerRestart(t *testing.T) {
	start, hostPort := restartableDevServer(t)
	server := start()
	t.Setenv("TEMPORAL_ADDRESS", hostPort)
	c, err := dialTemporal(context.Background(), Config{}, hostPort, testLogger(t, "info"))
	require.NoError(t, err)
	defer c.Close()

	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	s := startStackOn(t, cfg, c)
	s.startWorker(payingModel{})
	chat := uniqueChat("server-restart")
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"pay4","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	events.collectUntil(t, 30*time.Second, isButtonsMessage)

	require.NoError(t, server.Stop())
	server = start()
	defer server.Stop()

	var out bytes.Buffer
	require.Eventually(t, func() bool {
		out.Reset()
		return decideCommand(context.Background(), s.cfg, "approve", []string{"webchat:" + chat, "p1"}, &out, s.logger) == nil
	}, 60*time.Second, 500*time.Millisecond, "approving works once the server is back: %s", &out)
	assert.Contains(t, out.String(), "Proposal p1 approved by operator:")
	events.collectUntil(t, 60*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Equal(t, int32(1), calls.Load(), "the approved tool ran once")
}

// restartableDevServer is a dev server of the test's own, on a database
// file, so start may be called again after a Stop and finds what the
// last one kept; hostPort is where it listens.
func restartableDevServer(t *testing.T) (start func() *testsuite.DevServer, hostPort string) {
	cli, _ := filepath.Abs("../../bin/temporal")
	if env := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI"); env != "" {
		cli = env
	}
	hostPort = freeAddr(t)
	db := filepath.Join(t.TempDir(), "temporal.db")
	return func() *testsuite.DevServer {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var extra []string
		for _, sa := range workflows.SearchAttributes() {
			extra = append(extra, "--search-attribute", sa)
		}
		srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
			ExistingPath: cli, DBFilename: db, LogLevel: "error", ExtraArgs: extra,
			ClientOptions: &client.Options{HostPort: hostPort, Namespace: "default"},
		})
		require.NoError(t, err)
		return srv
	}, hostPort
}

// perSenderProposals is a web chat group under the per-sender scope
// where ana and the owner (boss) each asked for a call that waits for
// approval, both as p1 of their own sessions.
type perSenderProposals struct {
	stack     *stack
	chat      string
	events    *eventStream
	calls     *atomic.Int32
	ana, boss pipeline.SessionKey
	// proposals are the proposal messages, by the message each answers.
	proposals map[string]sseEvent
}

func startPerSenderProposals(t *testing.T, prefix string) perSenderProposals {
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.SessionScope = "per-sender"
	cfg.Activation = "always"
	s := startStack(t, cfg)
	s.startWorker(payingModel{})
	chat := uniqueChat(prefix)
	g := perSenderProposals{
		stack: s, chat: chat, events: subscribe(t, s.baseURL, chat), calls: calls,
		ana:       pipeline.SessionKey{Channel: "webchat", Chat: chat, Sender: "ana"},
		boss:      pipeline.SessionKey{Channel: "webchat", Chat: chat, Sender: "boss"},
		proposals: map[string]sseEvent{},
	}
	for _, m := range []struct{ id, sender string }{{"ana-pay", "ana"}, {"boss-pay", "boss"}} {
		code, body := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":%q,"chat_type":"group","text":"pay bob 5"}`, m.id, m.sender))
		require.Equal(t, http.StatusAccepted, code, body)
		seen := g.events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return isButtonsMessage(ev) && ev.ReplyTo == m.id })
		g.proposals[m.id] = seen[len(seen)-1]
		assert.Contains(t, g.proposals[m.id].Text, "Approval needed [p1]", "each sender's session numbers its own proposals")
	}
	for _, key := range []pipeline.SessionKey{g.ana, g.boss} {
		assert.Equal(t, workflows.StatusWaitingUser, s.stateOf(key).Status, "%s waits for a decision", key.Sender)
	}
	return g
}

// TestOwnerApprovesAnotherSendersProposalInAPerSenderGroup is a group
// chat where each sender has a session of their own, and so proposals
// numbered apart: ana's call and the owner's own both wait as p1. The
// owner presses Approve on ana's proposal message: ana's call runs and
// her message shows it approved, while the owner's own p1 still waits.
func TestOwnerApprovesAnotherSendersProposalInAPerSenderGroup(t *testing.T) {
	g := startPerSenderProposals(t, "ps-proposal")
	s, chat, events, calls, ana, boss := g.stack, g.chat, g.events, g.calls, g.ana, g.boss
	proposals := g.proposals

	anas := proposals["ana-pay"]
	require.Len(t, anas.Buttons, 2)
	assert.Equal(t, "approve:p1@ana", anas.Buttons[0].Action, "ana's buttons name her session")
	assert.Equal(t, http.StatusAccepted, s.press(chat, "boss", anas.MessageID, anas.Buttons[0].Action))
	seen := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool {
		return ev.Type == "message" && (strings.HasPrefix(ev.Text, "done:") || strings.HasPrefix(ev.Text, "⚠️"))
	})
	ran := seen[len(seen)-1]
	require.True(t, strings.HasPrefix(ran.Text, "done:"), "the press decided nothing: %q", ran.Text)
	assert.Equal(t, "ana-pay", ran.ReplyTo, "the call that ran is ana's, not the owner's own p1")
	if !slices.ContainsFunc(seen, func(ev sseEvent) bool { return ev.Type == "edit" && ev.MessageID == anas.MessageID }) {
		seen = append(seen, events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "edit" && ev.MessageID == anas.MessageID })...)
	}
	for _, ev := range seen {
		if ev.Type == "edit" {
			assert.Equal(t, anas.MessageID, ev.MessageID, "only ana's proposal message changes")
			assert.Equal(t, "✅ Approved by webchat:boss [p1]: pay (amount=5, to=bob)", ev.Text)
			assert.Empty(t, ev.Buttons, "a decided proposal has no buttons")
		}
	}
	assert.Equal(t, int32(1), calls.Load(), "one call ran")
	assert.Equal(t, workflows.StatusWaitingUser, s.stateOf(boss).Status, "the owner's own p1 still waits")
	recordHistoryOf(t, s.client, ana, "per_sender_proposal_approved_by_owner")
}

// In a per-sender group the proposal message tells how to decide by
// typing (/approve p1@ana): the owner's typed decision reaches ana's
// session and runs ana's call, while the owner's own p1 still waits.
func TestOwnerTypesTheDecisionOfAnotherSendersProposalInAPerSenderGroup(t *testing.T) {
	g := startPerSenderProposals(t, "ps-typed")
	s, chat, events, calls, ana, boss := g.stack, g.chat, g.events, g.calls, g.ana, g.boss
	anas := g.proposals["ana-pay"]
	require.Contains(t, anas.Text, "Reply /approve p1@ana or /reject p1@ana [reason].", "ana's proposal says how to decide it by typing")

	code, body := s.post(chat, `{"message_id":"boss-typed","sender_id":"boss","chat_type":"group","text":"/approve p1@ana"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool {
		return ev.Type == "message" && (strings.HasPrefix(ev.Text, "done:") || strings.HasPrefix(ev.Text, "⚠️"))
	})
	ran := seen[len(seen)-1]
	require.True(t, strings.HasPrefix(ran.Text, "done:"), "the typed decision decided nothing: %q", ran.Text)
	assert.Equal(t, "ana-pay", ran.ReplyTo, "the call that ran is ana's, not the owner's own p1")
	assert.Equal(t, int32(1), calls.Load(), "one call ran")
	assert.Equal(t, workflows.StatusWaitingUser, s.stateOf(boss).Status, "the owner's own p1 still waits")
	snap := s.stateOf(ana)
	require.Len(t, snap.Proposals, 1)
	assert.Equal(t, workflows.ProposalApproved, snap.Proposals[0].Status)
	assert.Equal(t, "webchat:boss", snap.Proposals[0].DecidedBy)
	recordHistoryOf(t, s.client, ana, "per_sender_proposal_typed_by_owner")
}
