package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/telemetry"
)

func TestPerSenderScopeGivesEachGroupSenderASession(t *testing.T) {
	scope := func(channel string) pipeline.SessionScope {
		if channel == "telegram" {
			return pipeline.SessionScopePerSender
		}
		return pipeline.SessionScopeShared
	}
	i := &Ingress{Scope: scope}
	group := pipeline.Inbound{Channel: "telegram", Account: "bot", ChatID: "-100", ChatType: pipeline.ChatGroup, SenderID: "42"}
	assert.Equal(t, "session:telegram:bot:-100:~42", i.SessionOf(group).WorkflowID())
	direct := group
	direct.ChatType, direct.ChatID = pipeline.ChatDirect, "42"
	assert.Equal(t, "session:telegram:bot:42", i.SessionOf(direct).WorkflowID(), "a direct chat is one session either way")
	other := group
	other.Channel = "slack"
	assert.Equal(t, "session:slack:bot:-100", i.SessionOf(other).WorkflowID(), "the scope is per channel")
	assert.Equal(t, "session:telegram:bot:-100", (&Ingress{}).SessionOf(group).WorkflowID(), "no scope: shared")
}

type refusingSink struct{ err error }

func (s refusingSink) Accept(context.Context, pipeline.Inbound) error { return s.err }

func TestCountedSinkCountsByOutcomeAndReason(t *testing.T) {
	tel, err := telemetry.New()
	require.NoError(t, err)
	in := pipeline.Inbound{Channel: "telegram"}
	at := time.Unix(1795000000, 0)
	for _, next := range []refusingSink{{}, {}, {&adapters.RateLimitedError{Limit: "sender"}}, {errors.New("unavailable")}} {
		_ = (&Counted{Next: next, Metrics: tel.MetricsHandler(), Now: func() time.Time { return at }}).Accept(context.Background(), in)
	}
	rec := httptest.NewRecorder()
	tel.Mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	page := rec.Body.String()
	assert.Regexp(t, `replyflow_inbound\{channel="telegram",outcome="accepted",reason=""[^}]*\} 2`, page)
	assert.Regexp(t, `replyflow_inbound\{channel="telegram",outcome="rejected",reason="rate_limit_sender"[^}]*\} 1`, page)
	assert.Regexp(t, `replyflow_inbound\{channel="telegram",outcome="rejected",reason="temporal_unavailable"[^}]*\} 1`, page)
	assert.Regexp(t, `replyflow_platform_last_event_timestamp_seconds\{channel="telegram"[^}]*\} 1\.795e\+09`, page)
}

func TestPlatformsAreReadyOnlyWhenEveryOneIsUp(t *testing.T) {
	s := NewStatus()
	assert.NoError(t, s.Ready(context.Background()))
	s.Report("webchat", adapters.Health{State: adapters.StateUp})
	s.Report("telegram", adapters.Health{State: adapters.StateConnecting})
	s.Report("slack", adapters.Health{State: adapters.StateFailed})
	assert.EqualError(t, s.Ready(context.Background()), "slack is failed, telegram is connecting")
}

func TestADrainingGatewayRefusesNewEventsAndIsUnready(t *testing.T) {
	d := &Drain{Next: refusingSink{}}
	require.NoError(t, d.Accept(context.Background(), pipeline.Inbound{}))
	require.NoError(t, d.Ready(context.Background()))
	d.Close()
	assert.ErrorIs(t, d.Accept(context.Background(), pipeline.Inbound{}), ErrDraining)
	assert.ErrorIs(t, d.Ready(context.Background()), ErrDraining)
	_, limited := adapters.AsRateLimited(d.Accept(context.Background(), pipeline.Inbound{}))
	assert.False(t, limited, "not a rate limit: the platforms deliver a refused event again")
}
