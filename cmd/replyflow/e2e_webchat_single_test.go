package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/webchat"
)

// The web chat keeps its readers in one gateway's memory, and the worker
// delivers to REPLYFLOW_WEBCHAT_URL: a second gateway with the web chat
// on, whose URL leads to the first, stops with the reason instead of
// taking readers who would never see their replies. The first goes on.
func TestASecondGatewayRefusesToServeTheWebChat(t *testing.T) {
	first := startStack(t, testConfig(t))

	second := first.cfg.withOwnPlatforms()
	webchatOf(second).URL = first.baseURL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = serveGateway(ctx, ln, first.client, second, first.logger)
	require.ErrorIs(t, err, webchat.ErrAnotherHost, "the second gateway must stop, not serve")
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_ENABLED=false")
	require.NoError(t, ctx.Err(), "it stopped at once, not at the test's deadline")

	resp, err := http.Get(first.baseURL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the first gateway keeps serving")
}
