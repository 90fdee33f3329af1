package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// `replyflow inspect` against real sessions whose payloads are encrypted:
// what an operator reads is the session's state decoded with the codec's
// keys, and each thing that waits for them comes with its command.

// TestInspectShowsAParkedDeliveryDecoded: Telegram refuses every send
// with an error of its own until the delivery deadline, and the turn
// parks. inspect shows the platform's error text (in the history only
// encrypted), the parked turn and the retry command; that command, once
// Telegram takes sends again, delivers the reply once.
func TestInspectShowsAParkedDeliveryDecoded(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort()) // for the commands
	cfg := testConfig(t)
	cfg.CodecKeys = codecKeyEntry(t, "inspk1")
	cfg.DeliveryTimeout, cfg.DeliveryDeadline = time.Second, 3*time.Second
	cfg, fake := withTelegram(t, cfg)
	s := &telegramStack{stack: startStackOn(t, cfg, dialWithCodec(t, cfg)), fake: fake}
	s.waitTelegramUp()
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	key := tgKey(chat)
	unique := randomToken()[:12]
	// Short: the session keeps the first 300 bytes of the failure's own
	// words, the adapter's wrapping of the platform's answer included.
	refusal := "Bad Gateway: relay-" + unique
	var refusing atomic.Bool
	refusing.Store(true)
	thisChat := func(p map[string]string) bool {
		return refusing.Load() && p["chat_id"] == strconv.FormatInt(chat.ID, 10)
	}
	s.fake.FailNext("sendMessage", 1000, telegramtest.Fault{Status: http.StatusBadGateway, Description: refusal, When: thisChat})

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "hello"})
	s.awaitStatus(key, workflows.StatusDeliveryFailed, "the turn parks once the delivery deadline passed")
	require.Empty(t, s.fake.Sent(chat.ID), "nothing was delivered")

	var out bytes.Buffer
	require.NoError(t, inspectCommand(context.Background(), s.cfg, []string{key.WorkflowID()}, &out, s.logger))
	view := oneSpace(out.String())
	t.Logf("replyflow inspect %s:\n%s", key.WorkflowID(), out.String())
	for _, want := range []string{
		"Session " + key.WorkflowID(),
		"State " + string(workflows.StatusDeliveryFailed),
		"Last turn delivery_failed, turn ",
		refusal,
		", " + workflows.PhaseParked + ", ",
		"Fix the cause in Last turn, then: replyflow retry " + key.WorkflowID(),
	} {
		assert.Contains(t, view, want)
	}

	// What inspect showed is in the history only encrypted; without the
	// keys the state cannot be read.
	raw := rawHistory(t, sessionHistory(t, temporalServer.Client(), key.WorkflowID()))
	assert.NotContains(t, raw, unique, "the platform's error in clear in the history")
	noKeys := s.cfg
	noKeys.CodecKeys = ""
	err := inspectCommand(context.Background(), noKeys, []string{key.WorkflowID()}, &bytes.Buffer{}, s.logger)
	assert.ErrorContains(t, err, "the session is encrypted; set REPLYFLOW_CODEC_KEYS")

	// The command inspect gave fixes it, once the cause is gone.
	refusing.Store(false)
	out.Reset()
	require.NoError(t, retryCommand(context.Background(), s.cfg, []string{key.WorkflowID()}, &out, s.logger))
	assert.Contains(t, out.String(), "Retry sent to "+key.WorkflowID())
	waitFor(t, s.fake, "the reply delivered on the retry", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	waitFor(t, s.fake, "the reaction cleared", cleared(s.fake, chat, asked))
	assert.Equal(t, []string{"You said: hello"}, sentTexts(s.fake, chat), "the reply, once")
	s.awaitStatus(key, workflows.StatusIdle, "the session is idle again")
}

// payingTo asks to call "pay" to one recipient until the prompt holds the
// call's result, then answers with what came back.
type payingTo struct{ to string }

func (payingTo) Name() string { return "test/paying" }

func (m payingTo) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	for _, msg := range p.Messages {
		if msg.Role == "tool" {
			return models.Completion{Text: "done: " + msg.Text}, nil
		}
	}
	return models.Completion{ToolCalls: []pipeline.ToolCall{{ID: "call-1", Name: "pay", Arguments: fmt.Sprintf(`{"amount":5,"to":%q}`, m.to)}}}, nil
}

// TestInspectListsAPendingProposalDecoded: a gated tool call waits for a
// decision. inspect shows the proposal's ID and summary (its arguments,
// in the history only encrypted) and the command that decides it; that
// command runs the tool once.
func TestInspectListsAPendingProposalDecoded(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort()) // for the commands
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.CodecKeys = codecKeyEntry(t, "inspk2")
	require.NoError(t, cfg.validate())
	s := startStackOn(t, cfg, dialWithCodec(t, cfg))
	to := "payee-" + randomToken()[:12]
	s.startWorker(payingTo{to: to})
	chat := uniqueChat("inspect-proposal")
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"ip1","sender_id":"alice","text":"pay them 5"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isButtonsMessage)
	s.awaitStatus(key, workflows.StatusWaitingUser, "the proposal waits for a decision")

	var out bytes.Buffer
	require.NoError(t, inspectCommand(context.Background(), s.cfg, []string{"webchat:" + chat}, &out, s.logger))
	view := oneSpace(out.String())
	t.Logf("replyflow inspect webchat:%s:\n%s", chat, out.String())
	summary := s.state(chat).Proposals[0].Summary
	require.Contains(t, summary, to, "the summary names the call's arguments")
	assert.Contains(t, view, "State "+string(workflows.StatusWaitingUser))
	assert.Contains(t, view, "Proposal p1: pay ("+summary+"), asked by webchat:alice, expires in ")
	assert.Contains(t, view, "decide: replyflow approve|reject "+key.WorkflowID()+" p1")

	raw := rawHistory(t, sessionHistory(t, temporalServer.Client(), key.WorkflowID()))
	assert.NotContains(t, raw, to, "the proposal's arguments in clear in the history")

	out.Reset()
	require.NoError(t, decideCommand(context.Background(), s.cfg, "approve", []string{key.WorkflowID(), "p1"}, &out, s.logger))
	events.collectUntil(t, 30*time.Second, isReplyTo("ip1"))
	assert.Equal(t, int32(1), calls.Load(), "the approved tool ran once")
}

// awaitStatus waits up to 30 s until the session's state query says
// status; until the session is started, or while its worker is busy, the
// query fails and is asked again.
func (s *stack) awaitStatus(key pipeline.SessionKey, status workflows.Status, what string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last := "no answer"
	for {
		if snap, err := querySnapshot(ctx, s.client, key.WorkflowID()); err != nil {
			last = err.Error()
		} else if snap.Status == status {
			return
		} else {
			last = "status " + string(snap.Status)
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("%s: %s never had status %s; last: %s", what, key.WorkflowID(), status, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
