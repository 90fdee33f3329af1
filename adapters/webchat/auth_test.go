package webchat

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// clock is a settable Now for the server.
type clock struct{ unix atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.unix.Store(t.Unix())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(c.unix.Load(), 0) }
func (c *clock) advance(d time.Duration) { c.unix.Add(int64(d / time.Second)) }

// authStack is a token-mode server, its sink and its clock.
type authStack struct {
	t      *testing.T
	url    string
	sink   *recordingSink
	clock  *clock
	signer *Signer
}

func newAuthStack(t *testing.T, origins ...string) *authStack {
	a := &authStack{t: t, sink: &recordingSink{}, clock: newClock(t0), signer: testSigner(t)}
	srv, err := NewServer(ServerConfig{Sink: a.sink, BotToken: token, AuthKey: testAuthKey, Now: a.clock.Now, TrustedOrigins: origins,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	a.url = ts.URL
	return a
}

// user signs a user token for who, valid for an hour unless who says.
func (a *authStack) user(who Claims) string {
	who.Kind, who.IssuedAt = KindUser, a.clock.Now().Unix()
	if who.ExpiresAt == 0 {
		who.ExpiresAt = a.clock.Now().Add(time.Hour).Unix()
	}
	tok, err := a.signer.Sign(who)
	require.NoError(a.t, err)
	return tok
}

// request sends method path with a JSON body (unless body is empty), the
// headers given as name, value pairs, and cookie if not nil; it never
// follows a redirect.
func (a *authStack) request(method, path, body string, cookie *http.Cookie, headers ...string) (*http.Response, string) {
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	require.NoError(a.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(a.t, err)
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		a.t.Cleanup(func() { resp.Body.Close() })
		return resp, ""
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp, string(data)
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

func (a *authStack) accepted() []pipeline.Inbound {
	a.sink.mu.Lock()
	defer a.sink.mu.Unlock()
	return append([]pipeline.Inbound(nil), a.sink.accepted...)
}

func TestTokenModeTakesTheSenderFromTheTokenOnly(t *testing.T) {
	a := newAuthStack(t)
	alice := a.user(Claims{Sub: "alice", Name: "Alice", Chats: []string{"room"}})
	boss := a.user(Claims{Sub: "boss", Owner: true, Chats: []string{"room"}})

	resp, body := a.request("POST", "/api/chats/room/messages", `{"message_id":"m1","text":"hi"}`, nil, bearer(alice)...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	resp, body = a.request("POST", "/api/chats/room/messages", `{"message_id":"m2","sender_id":"alice","sender_name":"Mallory","text":"hi"}`, nil, bearer(alice)...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	resp, body = a.request("POST", "/api/chats/room/actions", `{"action_id":"a1","message_id":"b-1","action":"approve:p1"}`, nil, bearer(boss)...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)

	got := a.accepted()
	require.Len(t, got, 3)
	for i, want := range []struct {
		sender, name string
		owner        bool
	}{{"alice", "Alice", false}, {"alice", "Alice", false}, {"boss", "boss", true}} {
		assert.Equal(t, want.sender, got[i].SenderID, "message %d", i)
		assert.Equal(t, want.name, got[i].SenderName, "message %d: the name is the token's, else its sub", i)
		assert.Equal(t, want.owner, got[i].SenderIsOwner, "message %d: owner only from an owner token", i)
	}

	// Forged senders: a body naming someone else, with a token of alice's.
	for path, forged := range map[string]string{
		"/api/chats/room/messages": `{"sender_id":"boss","text":"approve"}`,
		"/api/chats/room/actions":  `{"sender_id":"boss","message_id":"b-1","action":"approve:p1"}`,
	} {
		resp, body = a.request("POST", path, forged, nil, bearer(alice)...)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		assert.Contains(t, body, `sender_id \"boss\" is not the signed-in sender \"alice\"`, path)
	}
	assert.Len(t, a.accepted(), 3, "no forged message reached the sink")
}

func TestTokenModeRefusesMissingAndBadTokensWith401(t *testing.T) {
	a := newAuthStack(t)
	alice := a.user(Claims{Sub: "alice"})
	expired := a.user(Claims{Sub: "alice", ExpiresAt: t0.Add(-time.Second).Unix()})
	issued, err := a.signer.Issue(Claims{Sub: "alice"}, time.Hour, t0)
	require.NoError(t, err)
	other, err := NewSigner(strings.Repeat("x", 40))
	require.NoError(t, err)
	foreign, err := other.Sign(Claims{Sub: "alice", Kind: KindUser})
	require.NoError(t, err)

	for name, c := range map[string]struct {
		headers []string
		reason  string
	}{
		"no token":          {nil, "sign in first"},
		"not Bearer":        {[]string{"Authorization", "Basic " + alice}, "must be `Bearer"},
		"garbage":           {bearer("v1.not.atoken"), "not a replyflow web chat token"},
		"tampered":          {bearer(alice[:len(alice)-2] + "AA"), "signature does not match"},
		"another key":       {bearer(foreign), "signature does not match"},
		"expired":           {bearer(expired), "expired"},
		"a login link's":    {bearer(issued.Login), "wrong kind"},
		"cookie is garbage": {[]string{"Cookie", CookieName + "=v1.x.y"}, "not a replyflow web chat token"},
	} {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/api/chats/room/messages", `{"sender_id":"alice","text":"hi"}`},
			{"POST", "/api/chats/room/actions", `{"sender_id":"alice","message_id":"b-1","action":"approve:p1"}`},
			{"GET", "/api/chats/room/events", ""},
			{"GET", "/api/me", ""},
		} {
			resp, body := a.request(r.method, r.path, r.body, nil, c.headers...)
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s %s", name, r.method, r.path)
			assert.Contains(t, body, c.reason, "%s: %s %s", name, r.method, r.path)
			assert.Equal(t, `Bearer realm="replyflow web chat"`, resp.Header.Get("WWW-Authenticate"))
			if len(c.headers) == 2 && len(c.headers[1]) > 20 {
				assert.NotContains(t, body, c.headers[1][len(c.headers[1])-20:], "%s: the answer never repeats the token", name)
			}
		}
	}
	assert.Empty(t, a.accepted())
}

func TestATokenConfinedToChatsIsRefusedElsewhere(t *testing.T) {
	a := newAuthStack(t)
	tok := a.user(Claims{Sub: "alice", Chats: []string{"room"}})
	resp, body := a.request("POST", "/api/chats/room/messages", `{"text":"hi"}`, nil, bearer(tok)...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/chats/other/messages", `{"text":"hi"}`},
		{"POST", "/api/chats/other/actions", `{"message_id":"b-1","action":"approve:p1"}`},
		{"GET", "/api/chats/other/events", ""},
	} {
		resp, body := a.request(r.method, r.path, r.body, nil, bearer(tok)...)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, r.path)
		assert.Contains(t, body, `confined to other chats than \"other\"`, r.path)
	}
	assert.Len(t, a.accepted(), 1)
	resp, body = a.request("GET", "/api/me", "", nil, bearer(tok)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"auth":"token","sender_id":"alice","name":"alice","owner":false,"chats":["room"]}`, body)
}

// login opens a login link and returns the answer and the cookie it set.
func (a *authStack) login(link string, headers ...string) (*http.Response, string, *http.Cookie) {
	resp, body := a.request("GET", "/login?t="+url.QueryEscape(link), "", nil, headers...)
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			return resp, body, c
		}
	}
	return resp, body, nil
}

func TestALoginLinkSignsInOnce(t *testing.T) {
	a := newAuthStack(t)
	issued, err := a.signer.Issue(Claims{Sub: "boss", Name: "The Boss", Owner: true, Chats: []string{"room"}}, 720*time.Hour, a.clock.Now())
	require.NoError(t, err)

	resp, _ := a.request(http.MethodHead, "/login?t="+url.QueryEscape(issued.Login), "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Cookies(), "a HEAD neither signs in nor uses the link up")

	resp, body, cookie := a.login(issued.Login)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	assert.Equal(t, "/", resp.Header.Get("Location"))
	assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
	require.NotNil(t, cookie, "the link sets the sign-in cookie")
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	assert.Equal(t, "/", cookie.Path)
	assert.False(t, cookie.Secure, "plain HTTP, no proxy saying https")
	claims, err := a.signer.Verify(cookie.Value, KindUser, a.clock.Now())
	require.NoError(t, err, "the cookie holds a user token")
	assert.Equal(t, t0.Add(720*time.Hour).Unix(), claims.ExpiresAt, "the sign-in lasts as long as the token issued with the link")

	resp, body = a.request("GET", "/api/me", "", cookie)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.JSONEq(t, `{"auth":"token","sender_id":"boss","name":"The Boss","owner":true,"chats":["room"]}`, body)
	resp, body = a.request("POST", "/api/chats/room/messages", `{"message_id":"m1","text":"hi"}`, cookie)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	got := a.accepted()
	require.Len(t, got, 1)
	assert.Equal(t, "boss", got[0].SenderID)
	assert.True(t, got[0].SenderIsOwner)

	resp, body, again := a.login(issued.Login)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a link works once")
	assert.Contains(t, body, "used already")
	assert.Contains(t, body, "Ask for a new link")
	assert.Nil(t, again, "a refused link sets no cookie")

	second, err := a.signer.Issue(Claims{Sub: "boss"}, 0, a.clock.Now())
	require.NoError(t, err)
	resp, _, cookie = a.login(second.Login, "X-Forwarded-Proto", "https")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.True(t, cookie.Secure, "behind a TLS proxy the cookie is Secure")
	assert.Greater(t, cookie.MaxAge, 300*24*60*60, "a sign-in without expiry keeps the cookie as long as browsers do")
}

func TestExpiredOrForgedLoginLinksAreRefused(t *testing.T) {
	a := newAuthStack(t)
	issued, err := a.signer.Issue(Claims{Sub: "alice"}, time.Hour, a.clock.Now())
	require.NoError(t, err)
	long, err := a.signer.Sign(Claims{Sub: "alice", Kind: KindLogin, ID: "l-long", ExpiresAt: t0.Add(24 * time.Hour).Unix()})
	require.NoError(t, err)
	for name, c := range map[string]struct{ link, reason string }{
		"tampered":       {issued.Login[:len(issued.Login)-2] + "AA", "signature does not match"},
		"a user token":   {issued.User, "wrong kind"},
		"no token":       {"", "not a replyflow web chat token"},
		"lives too long": {long, "longer than login links may be"},
	} {
		resp, body, cookie := a.login(c.link)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		assert.Contains(t, body, c.reason, name)
		assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
		assert.Nil(t, cookie, name)
	}

	a.clock.advance(LoginLinkTTL)
	resp, body, cookie := a.login(issued.Login)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, "expired")
	assert.Contains(t, body, "Ask for a new link")
	assert.Nil(t, cookie)
}

func TestLogoutClearsTheCookieAndIsSameOriginJSONOnly(t *testing.T) {
	a := newAuthStack(t)
	resp, _ := a.request("POST", "/logout", "{}", nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	cleared := resp.Cookies()
	require.Len(t, cleared, 1)
	assert.Equal(t, CookieName, cleared[0].Name)
	assert.Empty(t, cleared[0].Value)
	assert.Less(t, cleared[0].MaxAge, 0, "Max-Age=0 tells the browser to drop it")

	resp, _ = a.request("POST", "/logout", "", nil, "Content-Type", "text/plain")
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	resp, _ = a.request("POST", "/logout", "{}", nil, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestTheEventStreamNeedsASignInAndEndsWithIt(t *testing.T) {
	a := newAuthStack(t)
	resp, body := a.request("GET", "/api/chats/room/events", "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)

	// The page's EventSource sends the cookie a login link set.
	issued, err := a.signer.Issue(Claims{Sub: "alice", Chats: []string{"room"}}, time.Hour, a.clock.Now())
	require.NoError(t, err)
	_, _, cookie := a.login(issued.Login)
	require.NotNil(t, cookie)
	resp, _ = a.request("GET", "/api/chats/room/events", "", cookie)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stream := bufio.NewReader(resp.Body)
	resp, body = a.request("POST", "/api/chats/room/messages", `{"message_id":"m1","text":"hello"}`, cookie)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	assert.Equal(t, []string{`user {"message_id":"m1","sender_id":"alice","sender_name":"alice","text":"hello"}`}, readEvents(t, stream, 1))

	// A sign-in that expires in a second: its stream is cut then.
	brief := a.user(Claims{Sub: "alice", Chats: []string{"room"}, ExpiresAt: a.clock.Now().Add(time.Second).Unix()})
	resp, _ = a.request("GET", "/api/chats/room/events", "", nil, bearer(brief)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.Copy(io.Discard, resp.Body)
	assert.NoError(t, err, "the stream ended cleanly when the sign-in expired (the client's 30s timeout did not)")
}

func TestMeInNoneModeSaysSo(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	resp, err := http.Get(ts.URL + "/api/me")
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"auth":"none","owner":false}`, string(data))

	// In none mode no body makes an owner: the flag is not a field.
	sink := &recordingSink{}
	ts = newTestServer(t, sink)
	code, body := post(t, ts.URL+"/api/chats/room/messages", "", `{"sender_id":"boss","text":"hi","sender_is_owner":true}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	code, body = post(t, ts.URL+"/api/chats/room/messages", "", `{"sender_id":"boss","text":"hi"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, sink.accepted, 1)
	assert.False(t, sink.accepted[0].SenderIsOwner)
	code, _ = post(t, ts.URL+"/api/chats/room/messages", "Bearer "+testAuthKey, `{"sender_id":"boss","text":"hi"}`)
	assert.Equal(t, http.StatusAccepted, code, "none mode ignores any token")
	require.Len(t, sink.accepted, 2)
	assert.False(t, sink.accepted[1].SenderIsOwner)
}

func TestNewServerNeedsAKeyInTokenMode(t *testing.T) {
	_, err := NewServer(ServerConfig{Sink: &recordingSink{}, BotToken: "b"})
	require.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH_KEY is not set")
	assert.ErrorContains(t, err, "openssl rand -base64 32")
	_, err = NewServer(ServerConfig{Sink: &recordingSink{}, BotToken: "b", AuthKey: "short"})
	assert.ErrorContains(t, err, "at least 32")
	_, err = NewServer(ServerConfig{Sink: &recordingSink{}, BotToken: "b", Auth: "open"})
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH must be token or none")
}

func TestUsedLinksAreKeptUntilTheyExpireAndBounded(t *testing.T) {
	u := newUsedLinks(2)
	assert.Equal(t, linkFresh, u.use("a", t0.Add(time.Minute), t0))
	assert.Equal(t, linkUsed, u.use("a", t0.Add(time.Minute), t0))
	assert.Equal(t, linkFresh, u.use("b", t0.Add(time.Hour), t0))
	assert.Equal(t, linksFull, u.use("c", t0.Add(time.Minute), t0), "a full set refuses rather than forget a live link")
	assert.Equal(t, linkUsed, u.use("b", t0.Add(time.Hour), t0))
	assert.Equal(t, linkFresh, u.use("c", t0.Add(time.Hour), t0.Add(time.Minute)), "once a expired there is room")
	assert.Equal(t, linkUsed, u.use("b", t0.Add(time.Hour), t0.Add(time.Minute)))
}

// A token issued without chats reaches only its sender's own chat (the
// chat whose ID is its sender ID): with alice's, bob's chat is neither
// read (even with ?replay=all), nor posted to, nor acted in.
func TestAPlainTokenReachesOnlyItsSendersChat(t *testing.T) {
	a := newAuthStack(t)
	alice := a.user(Claims{Sub: "alice"})
	bob := a.user(Claims{Sub: "bob"})
	resp, body := a.request("POST", "/api/chats/bob/messages", `{"message_id":"b1","text":"my secret"}`, nil, bearer(bob)...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)

	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/chats/bob/messages", `{"text":"posted by alice"}`},
		{"POST", "/api/chats/bob/actions", `{"message_id":"b-1","action":"approve:p1"}`},
		{"GET", "/api/chats/bob/events?replay=all", ""},
		{"POST", "/api/chats/bob/messages", `{"text":"/export"}`},
		{"POST", "/api/chats/alice-2/messages", `{"text":"not her chat either"}`},
	} {
		resp, body := a.request(r.method, r.path, r.body, nil, bearer(alice)...)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s", r.method, r.path)
		assert.Contains(t, body, "reaches only the chat", r.path)
		assert.Contains(t, body, "--all-chats", "%s: the reason says how to reach more chats", r.path)
	}
	require.Len(t, a.accepted(), 1, "nothing of alice's reached bob's chat")

	resp, body = a.request("POST", "/api/chats/alice/messages", `{"text":"hi"}`, nil, bearer(alice)...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	resp, body = a.request("GET", "/api/me", "", nil, bearer(alice)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"auth":"token","sender_id":"alice","name":"alice","owner":false,"chats":["alice"]}`, body,
		"the page learns the one chat a plain token reaches")
}

// A token for every chat is asked for explicitly, and then reaches any.
func TestAnAllChatsTokenReachesEveryChat(t *testing.T) {
	a := newAuthStack(t)
	ops := a.user(Claims{Sub: "ops", AllChats: true})
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/chats/bob/messages", `{"text":"hi"}`},
		{"POST", "/api/chats/bob/actions", `{"message_id":"b-1","action":"approve:p1"}`},
		{"GET", "/api/chats/bob/events?replay=all", ""},
	} {
		resp, body := a.request(r.method, r.path, r.body, nil, bearer(ops)...)
		assert.Less(t, resp.StatusCode, 300, "%s %s: %s", r.method, r.path, body)
	}
	resp, body := a.request("GET", "/api/me", "", nil, bearer(ops)...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"auth":"token","sender_id":"ops","name":"ops","owner":false,"all_chats":true}`, body)

	// A login link carries the same reach into its cookie.
	issued, err := a.signer.Issue(Claims{Sub: "ops", AllChats: true}, time.Hour, a.clock.Now())
	require.NoError(t, err)
	_, _, cookie := a.login(issued.Login)
	require.NotNil(t, cookie)
	resp, body = a.request("POST", "/api/chats/carol/messages", `{"text":"hi"}`, cookie)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode, body)
}
