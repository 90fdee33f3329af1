package webchat

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requestWithHost sends method path to ts with the Host header host and
// returns the status and, unless it is an event stream, the body.
func requestWithHost(t *testing.T, base, host, method, path, body string) (int, string) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = host
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, ""
	}
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own
// name as Host. In none mode (anyone who reaches the gateway speaks as
// anyone) only the loopback names are answered.
func TestNoneModeAnswersOnlyLoopbackHostNames(t *testing.T) {
	sink := &recordingSink{}
	ts := newTestServer(t, sink)
	u, err := url.Parse(ts.URL)
	require.NoError(t, err)
	port := u.Port()
	calls := []struct{ method, path, body string }{
		{"POST", "/api/chats/room/messages", `{"sender_id":"alice","text":"/send off"}`},
		{"GET", "/api/chats/room/events?replay=all", ""},
		{"POST", "/api/chats/room/actions", `{"sender_id":"alice","message_id":"b-1","action":"approve:p1"}`},
		{"GET", "/api/me", ""},
		{"GET", "/", ""},
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.nip.io:" + port, "localhost.evil.example:" + port} {
		for _, c := range calls {
			code, body := requestWithHost(t, ts.URL, host, c.method, c.path, c.body)
			assert.Equal(t, http.StatusMisdirectedRequest, code, "%s %s with Host %s", c.method, c.path, host)
			assert.Contains(t, body, "REPLYFLOW_WEBCHAT_AUTH=none", "%s %s: the reason names the mode", c.method, c.path)
			assert.Contains(t, body, "localhost", "%s %s: the reason names the names answered", c.method, c.path)
		}
	}
	sink.mu.Lock()
	assert.Empty(t, sink.accepted, "no message reached a session through a foreign name")
	sink.mu.Unlock()

	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "localhost", "127.0.0.1", "[::1]", "LocalHost:" + port} {
		for _, c := range calls {
			code, body := requestWithHost(t, ts.URL, host, c.method, c.path, c.body)
			assert.Less(t, code, 300, "%s %s with Host %s: %s", c.method, c.path, host, body)
		}
	}
}

// In token mode the token says who speaks, so any name (a proxy's) is
// answered.
func TestTokenModeAnswersAnyHostName(t *testing.T) {
	a := newAuthStack(t)
	code, _ := requestWithHost(t, a.url, "chat.example", "GET", "/healthz", "")
	assert.Equal(t, http.StatusOK, code)
	code, _ = requestWithHost(t, a.url, "chat.example", "GET", "/api/me", "")
	assert.Equal(t, http.StatusUnauthorized, code, "a sign-in is asked for, not a name")
}
