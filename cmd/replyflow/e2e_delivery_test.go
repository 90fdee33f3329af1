package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/workflows"
)

// TestParkedDeliveryIsRetriedByTheOperator: the gateway (the web chat's
// platform) is down past the delivery deadline, the turn parks, and
// `replyflow retry` delivers the reply once the gateway is back.
func TestParkedDeliveryIsRetriedByTheOperator(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort())
	cfg := testConfig(t)
	cfg.DeliveryTimeout, cfg.DeliveryDeadline = time.Second, 3*time.Second
	s := startStack(t, cfg)
	release := make(chan struct{})
	model := holding("park me", release)
	s.startWorker(model)
	chat, calm := uniqueChat("parked"), uniqueChat("calm")

	var out bytes.Buffer
	code, _ := s.post(calm, `{"message_id":"c1","sender_id":"alice","text":"nothing to see"}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool { return s.state(calm).Counters.Turns == 1 }, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, retryCommand(context.Background(), s.cfg, []string{"webchat:" + calm}, &out, s.logger))
	assert.Contains(t, out.String(), "Nothing is parked in session:webchat:"+calm)

	code, _ = s.post(chat, `{"message_id":"p1","sender_id":"alice","text":"park me"}`)
	require.Equal(t, http.StatusAccepted, code)
	model.waitStarted(t, "park me")
	s.stopGateway()
	close(release)
	require.Eventually(t, func() bool { return s.state(chat).Status == workflows.StatusDeliveryFailed }, 30*time.Second, 100*time.Millisecond,
		"the turn parks once the deadline passed")

	s.restartGateway()
	events := subscribe(t, s.baseURL, chat)
	out.Reset()
	require.NoError(t, retryCommand(context.Background(), s.cfg, []string{"--reason", "gateway is back", "webchat:" + chat}, &out, s.logger))
	assert.Contains(t, out.String(), "Retry sent to session:webchat:"+chat)
	seen := events.collectUntil(t, 30*time.Second, isClearOf("p1"))
	assert.Equal(t, 1, countMessages(seen), "the reply arrives once")
	assert.Equal(t, []string{"reaction p1 ✅", "reaction p1 "}, summarize(seen, "p1")[1:], "after the reply: ✅, then cleared")
	assert.Equal(t, workflows.StatusIdle, s.state(chat).Status)
	recordHistory(t, s.client, chat, "parked_retry")
}
