package gateway

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/telemetry"
	"github.com/replyflow/replyflow/workflows"
)

// temporalTaking is a Temporal client that takes every signal but those
// to the session unavailable names.
func temporalTaking(unavailable string) *mocks.Client {
	c := &mocks.Client{}
	anyArgs := func(workflowID any) []any {
		return []any{mock.Anything, workflowID, mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything}
	}
	c.On("SignalWithStartWorkflow", anyArgs(unavailable)...).Return(nil, errors.New("temporal unavailable"))
	c.On("SignalWithStartWorkflow", anyArgs(mock.Anything)...).Return(nil, nil)
	return c
}

// signalled counts the signals c was asked to send, by name.
func signalled(c *mocks.Client, name string) int {
	n := 0
	for _, call := range c.Calls {
		if call.Method == "SignalWithStartWorkflow" && call.Arguments.String(2) == name {
			n++
		}
	}
	return n
}

func inboundCounts(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var counts bytes.Buffer
	for _, line := range bytes.Split(rec.Body.Bytes(), []byte("\n")) {
		if bytes.HasPrefix(line, []byte(MetricInbound+"{")) {
			counts.Write(append(line, '\n'))
		}
	}
	return counts.String()
}

func TestTheChainDrainsThenCountsThenLimitsThenSignals(t *testing.T) {
	tel, err := telemetry.New()
	require.NoError(t, err)
	temporal := temporalTaking("session:telegram:bot:down")
	var log bytes.Buffer
	chain := NewChain(ChainConfig{
		Client: temporal, TaskQueue: "sessions", Limits: senderOnly(Rate{Burst: 1, Every: time.Hour}),
		Metrics: tel.MetricsHandler(), Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil)),
	})
	ctx := t.Context()
	assert.Contains(t, log.String(), `"Inbound rate limits (REPLYFLOW_RATE_*)" sender=1@1h0m0s chat=off`)

	require.NoError(t, chain.Accept(ctx, msg("telegram", "1", "alice", 0)))
	_, limited := adapters.AsRateLimited(chain.Accept(ctx, msg("telegram", "1", "alice", 1)))
	require.True(t, limited, "the sender's one token is spent")
	assert.Error(t, chain.Accept(ctx, msg("telegram", "down", "bob", 0)), "Temporal's refusal comes back to the adapter")
	assert.Equal(t, 2, signalled(temporal, workflows.SignalInbound), "the limited message reached no signal")
	counts := inboundCounts(t, tel)
	assert.Regexp(t, `outcome="accepted",reason=""[^}]*\} 1\n`, counts)
	assert.Regexp(t, `outcome="rejected",reason="rate_limit_sender"[^}]*\} 1\n`, counts, "the count stands outside the limiter")
	assert.Regexp(t, `outcome="rejected",reason="temporal_unavailable"[^}]*\} 1\n`, counts)

	reaction := pipeline.Feedback{Channel: "telegram", Account: "bot", ChatID: "2", SenderID: "carol", MessageID: "7", Emoji: []string{"👍"}}
	require.NoError(t, chain.Feedback(ctx, reaction))
	_, limited = adapters.AsRateLimited(chain.Feedback(ctx, reaction))
	assert.True(t, limited, "feedback passes the limiter")
	assert.Equal(t, 1, signalled(temporal, workflows.SignalFeedback))
	assert.Equal(t, counts, inboundCounts(t, tel), "feedback is not counted")

	require.NoError(t, chain.Ready(ctx))
	chain.Close()
	assert.ErrorIs(t, chain.Ready(ctx), ErrDraining)
	err = chain.Accept(ctx, msg("telegram", "1", "alice", 2))
	assert.ErrorIs(t, err, ErrDraining, "the drain refuses before the limiter would")
	_, limited = adapters.AsRateLimited(err)
	assert.False(t, limited)
	assert.ErrorIs(t, chain.Accept(ctx, msg("telegram", "3", "dave", 0)), ErrDraining)
	assert.Equal(t, counts, inboundCounts(t, tel), "what the drain refuses is not counted")
	assert.Equal(t, 2, signalled(temporal, workflows.SignalInbound), "nor signalled")
	chain.Wait()
}

func TestAChainWithoutMetricsCountsNothing(t *testing.T) {
	temporal := temporalTaking("session:telegram:bot:down")
	chain := NewChain(ChainConfig{Client: temporal, TaskQueue: "sessions", Logger: slog.New(slog.DiscardHandler)})
	// Counted with no Metrics would panic: the stage is left out.
	require.NoError(t, chain.Accept(t.Context(), msg("telegram", "1", "alice", 0)))
	assert.Error(t, chain.Accept(t.Context(), msg("telegram", "down", "bob", 0)))
	assert.Equal(t, 2, signalled(temporal, workflows.SignalInbound))
}
