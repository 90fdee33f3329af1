package webchat

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attack of issue 17: a page on another site, open in an operator's
// browser, posts an owner's approval as text/plain (a "simple request" a
// browser sends without asking). It must reach no session.
func TestACrossSitePostIsRefusedBeforeAnyRoute(t *testing.T) {
	sink := &recordingSink{}
	srv, err := NewServer(ServerConfig{Sink: sink, BotToken: "bot-token", TrustedOrigins: []string{"https://chat.example"},
		Now: func() time.Time { return time.Unix(1700000000, 0) }})
	require.NoError(t, err)
	send := func(contentType, origin, fetchSite string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://gateway.local/api/chats/room/actions",
			strings.NewReader(`{"sender_id":"boss","message_id":"b-1","action":"approve:p1"}`))
		req.Host = "gateway.local"
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", fetchSite)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}

	for _, tc := range []struct {
		name, contentType, origin, fetchSite string
		want                                 int
	}{
		{"text/plain from another site", "text/plain", "https://evil.example", "cross-site", http.StatusForbidden},
		{"JSON from another site", "application/json", "https://evil.example", "cross-site", http.StatusForbidden},
		{"JSON from another site, an old browser", "application/json", "https://evil.example", "", http.StatusForbidden},
		{"text/plain without Origin (not a browser)", "text/plain", "", "", http.StatusUnsupportedMediaType},
		{"a form", "application/x-www-form-urlencoded", "http://gateway.local", "same-origin", http.StatusUnsupportedMediaType},
		{"the gateway's own page", "application/json", "http://gateway.local", "same-origin", http.StatusAccepted},
		{"a trusted front end", "application/json; charset=utf-8", "https://chat.example", "cross-site", http.StatusAccepted},
		{"a program", "application/json", "", "", http.StatusAccepted},
	} {
		w := send(tc.contentType, tc.origin, tc.fetchSite)
		assert.Equal(t, tc.want, w.Code, "%s: %s", tc.name, w.Body.String())
	}
	assert.Len(t, sink.accepted, 3, "only the three allowed requests reached the sink")

	_, err = NewServer(ServerConfig{Sink: sink, BotToken: "t", TrustedOrigins: []string{"chat.example/path"}})
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_ORIGINS")
}
