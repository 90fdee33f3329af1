package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/adapters"
)

// On an address anyone reaches, /healthz says each platform's state, and
// its last error only to the requests the gateway lets see it.
func TestAPublicHealthzTellsAPlatformsErrorOnlyToTheOperator(t *testing.T) {
	s := NewStatus()
	s.Report("webchat", adapters.Health{State: adapters.StateUp})
	s.Report("telegram", adapters.Health{State: adapters.StateConnecting, Attempts: 2, Error: "Post https://10.0.0.9/getMe: connection refused"})
	public := s.Public(func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer op" })
	get := func(h http.Handler, auth string) string {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code)
		return rec.Body.String()
	}
	const withheld = `{"platforms":{"telegram":{"state":"connecting","attempts":2},"webchat":{"state":"up"}}}`
	const told = `{"platforms":{"telegram":{"state":"connecting","error":"Post https://10.0.0.9/getMe: connection refused","attempts":2},"webchat":{"state":"up"}}}`
	assert.JSONEq(t, withheld, get(public, ""))
	assert.JSONEq(t, withheld, get(public, "Bearer wrong"))
	assert.JSONEq(t, told, get(public, "Bearer op"))
	assert.JSONEq(t, told, get(s, ""), "its own handler, on an operator's address, tells all")
}
