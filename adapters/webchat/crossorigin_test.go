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

// The attack: a page on another site, open in an operator's
// browser, posts an owner's approval as text/plain (a "simple request" a
// browser sends without asking). It must reach no session.
func TestACrossSitePostIsRefusedBeforeAnyRoute(t *testing.T) {
	sink := &recordingSink{}
	srv, err := NewServer(ServerConfig{Sink: sink, BotToken: "bot-token", Auth: AuthNone, TrustedOrigins: []string{"https://chat.example"},
		Now: func() time.Time { return time.Unix(1700000000, 0) }})
	require.NoError(t, err)
	send := func(contentType, origin, fetchSite string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://localhost:8080/api/chats/room/actions",
			strings.NewReader(`{"sender_id":"boss","message_id":"b-1","action":"approve:p1"}`))
		req.Host = "localhost:8080"
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
		{"a form", "application/x-www-form-urlencoded", "http://localhost:8080", "same-origin", http.StatusUnsupportedMediaType},
		{"the gateway's own page", "application/json", "http://localhost:8080", "same-origin", http.StatusAccepted},
		{"a trusted front end", "application/json; charset=utf-8", "https://chat.example", "cross-site", http.StatusAccepted},
		{"a program", "application/json", "", "", http.StatusAccepted},
	} {
		w := send(tc.contentType, tc.origin, tc.fetchSite)
		assert.Equal(t, tc.want, w.Code, "%s: %s", tc.name, w.Body.String())
	}
	assert.Len(t, sink.accepted, 3, "only the three allowed requests reached the sink")

	_, err = NewServer(ServerConfig{Sink: sink, BotToken: "t", Auth: AuthNone, TrustedOrigins: []string{"chat.example/path"}})
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_ORIGINS")
}

// The same attack where users sign in: the operator's browser holds an
// owner's sign-in cookie, and a forged sender_id is refused even from a
// program with a token of its own. Nothing reaches the sink.
func TestTheCrossSiteOwnerApprovalIsRefusedInTokenMode(t *testing.T) {
	a := newAuthStack(t, "https://chat.example")
	issued, err := a.signer.Issue(Claims{Sub: "boss", Owner: true}, time.Hour, a.clock.Now())
	require.NoError(t, err)
	_, _, ownerCookie := a.login(issued.Login)
	require.NotNil(t, ownerCookie)
	mallory := a.user(Claims{Sub: "mallory", Chats: []string{"room"}})
	approve := `{"sender_id":"boss","message_id":"b-1","action":"approve:p1"}`

	for _, tc := range []struct {
		name    string
		cookie  *http.Cookie
		headers []string
		want    int
	}{
		{"text/plain from another site, with the owner's cookie", ownerCookie,
			[]string{"Content-Type", "text/plain", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"JSON from another site, with the owner's cookie", ownerCookie,
			[]string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"text/plain, not a browser", nil, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"JSON claiming the owner, no sign-in", nil, nil, http.StatusUnauthorized},
		{"JSON claiming the owner, signed in as another", nil, bearer(mallory), http.StatusForbidden},
		{"JSON claiming the owner from a trusted origin, signed in as another", nil,
			append(bearer(mallory), "Origin", "https://chat.example", "Sec-Fetch-Site", "cross-site"), http.StatusForbidden},
	} {
		resp, body := a.request(http.MethodPost, "/api/chats/room/actions", approve, tc.cookie, tc.headers...)
		assert.Equal(t, tc.want, resp.StatusCode, "%s: %s", tc.name, body)
	}
	assert.Empty(t, a.accepted(), "no approval reached a session")
}

func TestCORSIsOpenToTheTrustedOriginsOnly(t *testing.T) {
	a := newAuthStack(t, "https://chat.example")
	preflight := func(origin string) *http.Response {
		resp, _ := a.request(http.MethodOptions, "/api/chats/room/messages", "", nil,
			"Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
		return resp
	}
	resp := preflight("https://chat.example")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "https://chat.example", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "GET, POST", resp.Header.Get("Access-Control-Allow-Methods"))
	assert.Equal(t, "Authorization, Content-Type, Last-Event-ID", resp.Header.Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
	assert.Equal(t, "600", resp.Header.Get("Access-Control-Max-Age"))
	assert.Equal(t, "Origin", resp.Header.Get("Vary"))

	tok := a.user(Claims{Sub: "alice", Chats: []string{"room"}})
	resp, body := a.request(http.MethodPost, "/api/chats/room/messages", `{"text":"hi"}`, nil,
		append(bearer(tok), "Origin", "https://chat.example", "Sec-Fetch-Site", "cross-site")...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	assert.Equal(t, "https://chat.example", resp.Header.Get("Access-Control-Allow-Origin"), "an actual answer to a trusted origin")
	assert.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
	assert.Equal(t, "Origin", resp.Header.Get("Vary"))

	noCORS := func(what string, resp *http.Response) {
		for name := range resp.Header {
			assert.False(t, strings.HasPrefix(name, "Access-Control-"), "%s: %s: %s", what, name, resp.Header.Get(name))
		}
	}
	resp = preflight("https://evil.example")
	assert.NotEqual(t, http.StatusNoContent, resp.StatusCode)
	noCORS("preflight from another origin", resp)
	resp, _ = a.request(http.MethodGet, "/api/me", "", nil, append(bearer(tok), "Origin", "https://evil.example")...)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a read is not refused, its answer is just not shared with the page")
	noCORS("GET from another origin", resp)
	resp, _ = a.request(http.MethodGet, "/api/me", "", nil, bearer(tok)...)
	noCORS("GET without Origin", resp)

	closed := newAuthStack(t)
	resp, _ = closed.request(http.MethodOptions, "/api/chats/room/messages", "", nil, "Origin", "https://chat.example", "Access-Control-Request-Method", "POST")
	noCORS("no origins configured", resp)
	assert.Empty(t, resp.Header.Get("Vary"))
}
