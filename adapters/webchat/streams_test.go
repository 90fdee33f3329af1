package webchat

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestASenderHoldsAtMostMaxStreamsAndAClosedStreamFreesItsSlot(t *testing.T) {
	a := newAuthStack(t)
	alice := a.user(Claims{Sub: "alice"})
	var open []*http.Response
	for i := range MaxStreamsPerSender {
		resp, body := a.request("GET", "/api/chats/alice/events", "", nil, bearer(alice)...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "stream %d: %s", i, body)
		open = append(open, resp)
	}
	resp, body := a.request("GET", "/api/chats/alice/events", "", nil, bearer(alice)...)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "stream %d from one sender", MaxStreamsPerSender+1)
	assert.Contains(t, body, fmt.Sprintf("%d event streams", MaxStreamsPerSender), "the reason names the bound")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	bob := a.user(Claims{Sub: "bob"})
	resp, body = a.request("GET", "/api/chats/bob/events", "", nil, bearer(bob)...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "another sender has slots of his own: %s", body)

	// A closed stream frees its slot once its handler returns: wait for
	// that, not for a while.
	require.NoError(t, open[0].Body.Close())
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body = a.request("GET", "/api/chats/alice/events", "", nil, bearer(alice)...)
		if resp.StatusCode == http.StatusOK {
			break
		}
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
		require.True(t, time.Now().Before(deadline), "the closed stream's slot was never freed")
		time.Sleep(10 * time.Millisecond)
	}
	resp, _ = a.request("GET", "/api/chats/alice/events", "", nil, bearer(alice)...)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "one slot freed, one taken")
	_, _ = io.Copy(io.Discard, resp.Body)
}
