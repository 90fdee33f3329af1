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

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// dyingSink is a gateway killed between getUpdates and the signal: it
// stops its poller and never hands the update to Temporal.
type dyingSink struct{ kill context.CancelFunc }

func (d dyingSink) Accept(context.Context, pipeline.Inbound) error {
	d.kill()
	return errors.New("killed")
}

func TestTelegramGatewayKilledBeforeTheSignalLosesNothing(t *testing.T) {
	cfg, fake := withTelegram(t, testConfig(t))
	chat := telegramtest.Private(uniqueTelegramID())
	asked := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "are you there?"})

	ctx, kill := context.WithTimeout(context.Background(), time.Minute)
	defer kill()
	doomed, err := telegram.NewReceiver(ctx, telegram.ReceiverConfig{Token: telegramOf(cfg).Token, APIURL: telegramOf(cfg).APIURL, Sink: dyingSink{kill}})
	require.NoError(t, err)
	require.NoError(t, doomed.Poll(ctx))
	require.NotEmpty(t, fake.Calls("getUpdates"), "the update was fetched")
	assert.Equal(t, 1, fake.Pending(), "and not confirmed")
	_, err = temporalServer.Client().DescribeWorkflowExecution(context.Background(), tgKey(chat).WorkflowID(), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no signal reached Temporal")

	s := &telegramStack{stack: startStack(t, cfg), fake: fake}
	s.startWorker(&testModel{})
	waitFor(t, fake, "the reaction cleared", cleared(fake, chat, asked))
	assert.Equal(t, []string{"You said: are you there?"}, sentTexts(fake, chat), "answered exactly once")
	assert.Zero(t, fake.Pending())
	assert.Equal(t, 1, s.stateOf(tgKey(chat)).TurnSeq)
}

func TestTelegramWebhookAnswers200OnlyAfterTheSignal(t *testing.T) {
	cfg := testConfig(t)
	telegramOf(cfg).Mode = "webhook"
	telegramOf(cfg).WebhookSecret = "s3cret-token"
	s := startTelegramStack(t, cfg)
	chat := telegramtest.Private(uniqueTelegramID())
	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "via webhook"})
	update := string(s.fake.Updates()[0])

	post := func(secret, body string) int {
		req, err := http.NewRequest(http.MethodPost, s.baseURL+telegramOf(cfg).WebhookPath, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, post("wrong", update))
	assert.Equal(t, http.StatusUnauthorized, post("", update))
	assert.Equal(t, http.StatusBadRequest, post("s3cret-token", `{"update_id": 1, "message": `))
	require.Equal(t, http.StatusOK, post("s3cret-token", update))

	// 200 means Temporal already holds the message: no waiting here.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	signals := 0
	iter := s.client.GetWorkflowHistory(ctx, tgKey(chat).WorkflowID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.SignalName == workflows.SignalInbound {
			signals++
		}
	}
	assert.Equal(t, 1, signals)

	s.startWorker(&testModel{})
	waitFor(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	assert.Equal(t, []string{"You said: via webhook"}, sentTexts(s.fake, chat))
}

// freeAddr is a loopback address nothing listens on right now, which
// no other process is handed while a gateway restarts on it.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	return addr
}

// With REPLYFLOW_WEBHOOK_ADDR the webhooks have an address of their own:
// exposing it to Telegram exposes neither the web chat nor its API, and
// the web chat's address no longer takes webhooks.
func TestWebhooksOnTheirOwnAddressExposeNothingElse(t *testing.T) {
	cfg := testConfig(t)
	telegramOf(cfg).Mode = "webhook"
	telegramOf(cfg).WebhookSecret = "s3cret-token"
	cfg.WebhookAddr = freeAddr(t)
	s := startTelegramStack(t, cfg)
	hooks := "http://" + cfg.WebhookAddr
	chat := telegramtest.Private(uniqueTelegramID())
	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "via the webhook address"})
	update := string(s.fake.Updates()[0])

	call := func(method, target, body string) int {
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret-token")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	path := telegramOf(cfg).WebhookPath
	assert.Equal(t, http.StatusOK, call(http.MethodGet, hooks+"/healthz", ""))
	assert.Equal(t, http.StatusNotFound, call(http.MethodGet, hooks+"/", ""), "no web chat page")
	assert.Equal(t, http.StatusNotFound, call(http.MethodPost, hooks+"/api/chats/x/messages", `{"sender_id":"a","text":"hi"}`), "no web chat API")
	assert.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, call(http.MethodPost, s.baseURL+path, update),
		"the web chat's address takes no webhook")
	require.Equal(t, http.StatusOK, call(http.MethodPost, hooks+path, update))

	s.startWorker(&testModel{})
	waitFor(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	assert.Equal(t, []string{"You said: via the webhook address"}, sentTexts(s.fake, chat))
}
