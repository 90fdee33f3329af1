package discord

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gateway's calls get gatewayCallsPerSecond at once; the next waits
// for its share, and one whose deadline comes first is not sent at all.
func TestTheGatewaysCallsArePacedToItsShareOfTheGlobalLimit(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served.Add(1) }))
	defer srv.Close()
	c := pacedClient(srv.Client())
	call := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for range gatewayCallsPerSecond {
		require.NoError(t, call(context.Background()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	assert.Error(t, call(ctx), "past the burst a call waits for its share, longer than its deadline")
	assert.Equal(t, int32(gatewayCallsPerSecond), served.Load(), "the refused call never reached Discord")
	require.NoError(t, call(context.Background()), "a call that may wait gets its turn")
	assert.Equal(t, int32(gatewayCallsPerSecond+1), served.Load())
}

func TestAPacedClientKeepsTheGivenClientsTimeout(t *testing.T) {
	assert.Equal(t, 7*time.Second, pacedClient(&http.Client{Timeout: 7 * time.Second}).Timeout)
	assert.Equal(t, 20*time.Second, pacedClient(nil).Timeout)
}
