package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// With REPLYFLOW_LINKS=true, a message linking to a service on the
// worker's own machine is answered, and the model reads why the link was
// not read: the worker refuses loopback when it dials, as configured
// (no test hook), and the service is never reached. Neither the notice
// nor the refusal is in the session's history.
func TestALinkToTheWorkersOwnMachineIsRefusedAndTheMessageAnswered(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "<p>internal admin page</p>")
	}))
	t.Cleanup(inside.Close)
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Links = "openai/gpt-4o", true
	s := startTelegramStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		require.NotNil(t, acts.Links, "REPLYFLOW_LINKS reaches the worker")
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}}
	})
	chat := telegramtest.Private(uniqueTelegramID())
	link := inside.URL + "/admin"

	oa.Push(modeltest.Step{Text: "I could not open that link"})
	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "what is on " + link + "?"})
	waitFor(t, s.fake, "the answer", func() bool { return slicesContains(sentTexts(s.fake, chat), "I could not open that link") })
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	got := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, got, "what is on "+link+"?")
	assert.Contains(t, got, "untrusted content from the web")
	assert.Contains(t, got, "[link "+link+" not read: refused, its address is loopback, which links may not reach]")
	assert.NotContains(t, got, "internal admin page")
	assert.Zero(t, hits.Load(), "the service on loopback was reached")

	raw := rawHistory(t, sessionHistory(t, s.client, tgKey(chat).WorkflowID()))
	assert.Contains(t, raw, "what is on ", "the message is in history (no codec in this test)")
	assert.False(t, strings.Contains(raw, "untrusted") || strings.Contains(raw, "not read:"), "what links gave stays out of history")
}
