package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/webchat"
	"github.com/replyflow/replyflow/workflows"
)

const testWebchatAuthKey = "e2e-webauth-key-0123456789abcdefghijklmnop"

// signIn is what `replyflow webchat token` printed: the Bearer token and
// the login link.
type signIn struct{ bearer, link string }

func issueSignIn(t *testing.T, cfg Config, args ...string) signIn {
	var out bytes.Buffer
	require.NoError(t, webchatCommand(append([]string{"token"}, args...), cfg, &out, io.Discard, time.Now()))
	lines := strings.Split(out.String(), "\n")
	var in signIn
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "Bearer token") && i+1 < len(lines):
			in.bearer = lines[i+1]
		case strings.HasPrefix(line, "Login link") && i+1 < len(lines):
			in.link = lines[i+1]
		}
	}
	require.NotEmpty(t, in.bearer, out.String())
	require.NotEmpty(t, in.link, out.String())
	return in
}

// postAs posts body to the chat's messages, signed in by signIn.
func (s *stack) postAs(chat, body string, signIn func(*http.Request)) (int, string) {
	req, err := http.NewRequest(http.MethodPost, s.baseURL+"/api/chats/"+chat+"/messages", strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	signIn(req)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func withBearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func withCookie(c *http.Cookie) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(c) }
}

// The gateway in token mode: the sender is the token's, a forged
// sender_id is refused, the stream needs a sign-in, and only an owner's
// token makes an owner.
func TestWebAuthTokenModeSpeaksAsTheTokensSender(t *testing.T) {
	cfg := testConfig(t)
	chat := webchatOf(cfg)
	chat.Auth, chat.AuthKey = "token", testWebchatAuthKey
	s := startStack(t, cfg)
	s.startWorker(nil)
	room := uniqueChat("wa-room")

	resp, err := http.Get(s.baseURL + "/api/chats/" + room + "/events")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no stream without a sign-in")

	alice := issueSignIn(t, s.cfg, "alice", "--name", "Alice", "--chat", room, "--url", s.baseURL)
	boss := issueSignIn(t, s.cfg, "boss", "--owner", "--all-chats")
	// The login link signs a browser in: its cookie opens the stream.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(alice.link)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == webchat.CookieName {
			cookie = c
		}
	}
	require.NotNil(t, cookie, "the login link set the sign-in cookie")
	events := subscribeAs(t, s.baseURL, room, withCookie(cookie))

	code, body := s.postAs(room, `{"message_id":"wa1","text":"hello as alice"}`, withBearer(alice.bearer))
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("wa1"))
	assert.Contains(t, summarize(seen, "wa1"), "message You said: hello as alice")
	snap := s.state(room)
	require.Len(t, snap.Participants, 1)
	assert.Equal(t, "webchat:alice", snap.Participants[0].ID, "the session heard the token's sender")
	assert.Equal(t, "Alice", snap.Participants[0].Name)

	code, body = s.postAs(room, `{"message_id":"wa2","sender_id":"boss","text":"approve:p1"}`, withBearer(alice.bearer))
	assert.Equal(t, http.StatusForbidden, code, "a forged sender_id is refused")
	assert.Contains(t, body, "not the signed-in sender")
	code, _ = s.post(room, `{"message_id":"wa3","sender_id":"alice","text":"no token"}`)
	assert.Equal(t, http.StatusUnauthorized, code, "a body alone says no one")
	code, _ = s.postAs(uniqueChat("wa-elsewhere"), `{"message_id":"wa4","text":"hi"}`, withBearer(alice.bearer))
	assert.Equal(t, http.StatusForbidden, code, "alice's sign-in is confined to her chat")

	// Only a token issued with --owner makes its holder an owner here.
	ownerRoom := uniqueChat("wa-owner")
	ownerEvents := subscribeAs(t, s.baseURL, ownerRoom, withBearer(boss.bearer))
	model := "openai/gpt-webauth-test"
	for _, c := range []struct {
		id, token, want string
	}{
		{"wo1", issueSignIn(t, s.cfg, "carol", "--chat", ownerRoom).bearer, "owners may choose any model"},
		{"wo2", boss.bearer, "Model for this chat: " + model},
	} {
		code, body := s.postAs(ownerRoom, fmt.Sprintf(`{"message_id":%q,"text":"/model %s"}`, c.id, model), withBearer(c.token))
		require.Equal(t, http.StatusAccepted, code, body)
		seen := ownerEvents.collectUntil(t, 30*time.Second, isReplyTo(c.id))
		assert.Contains(t, seen[len(seen)-1].Text, c.want, c.id)
	}
	assert.Equal(t, model, s.state(ownerRoom).ModelOverride)
	assert.Equal(t, workflows.StatusIdle, s.state(room).Status)
	recordHistory(t, s.client, ownerRoom, "webchat_owner_token")
}

// A token made without --chat reaches its sender's own chat only: with
// mallory's, alice's chat is neither read (?replay=all), nor exported,
// nor posted or acted in; an --all-chats token reaches it.
func TestWebAuthAPlainTokenStaysInItsSendersChat(t *testing.T) {
	cfg := testConfig(t)
	chat := webchatOf(cfg)
	chat.Auth, chat.AuthKey = "token", testWebchatAuthKey
	s := startStack(t, cfg)
	s.startWorker(nil)
	// A sender's own chat is named by its sender ID.
	aliceID := uniqueChat("alice")
	alice := issueSignIn(t, s.cfg, aliceID)
	mallory := issueSignIn(t, s.cfg, "mallory")

	events := subscribeAs(t, s.baseURL, aliceID, withBearer(alice.bearer))
	code, body := s.postAs(aliceID, `{"message_id":"pt1","text":"alice's secret"}`, withBearer(alice.bearer))
	require.Equal(t, http.StatusAccepted, code, body)
	events.collectUntil(t, 30*time.Second, isReplyTo("pt1"))

	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/chats/" + aliceID + "/events?replay=all", ""},
		{http.MethodPost, "/api/chats/" + aliceID + "/messages", `{"message_id":"pt2","text":"/export"}`},
		{http.MethodPost, "/api/chats/" + aliceID + "/messages", `{"message_id":"pt3","text":"posted by mallory"}`},
		{http.MethodPost, "/api/chats/" + aliceID + "/actions", `{"message_id":"pt1","action":"approve:p1"}`},
	} {
		req, err := http.NewRequest(r.method, s.baseURL+r.path, strings.NewReader(r.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+mallory.bearer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s: %s", r.method, r.path, data)
		assert.Contains(t, string(data), `reaches only the chat \"mallory\"`, r.path)
		assert.NotContains(t, string(data), "secret", r.path)
	}
	snap := s.state(aliceID)
	require.Len(t, snap.Participants, 1, "mallory never spoke in alice's chat")

	ops := issueSignIn(t, s.cfg, "ops", "--all-chats")
	code, body = s.postAs(aliceID, `{"message_id":"pt4","text":"from ops"}`, withBearer(ops.bearer))
	require.Equal(t, http.StatusAccepted, code, "an --all-chats token reaches any chat: %s", body)
	events.collectUntil(t, 30*time.Second, isReplyTo("pt4"))
}
