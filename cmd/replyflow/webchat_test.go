package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/webchat"
)

func TestWebchatTokenCommandPrintsATokenAndALoginLink(t *testing.T) {
	cfg := testConfig(t).withOwnPlatforms()
	webchatOf(cfg).Auth, webchatOf(cfg).AuthKey = "token", testWebchatAuthKey
	cfg.WebchatAddr = "10.0.0.5:8080"
	now := time.Unix(1700000000, 0)
	var out, warn bytes.Buffer
	// The sender first and the flags after it, as the usage shows.
	require.NoError(t, webchatCommand([]string{"token", "boss", "--owner", "--name", "The Boss", "--chat", "ops", "--chat", "wa-x", "--ttl", "48h"},
		cfg, &out, &warn, now))
	assert.Empty(t, warn.String())
	text := out.String()
	assert.Contains(t, text, "Web chat sign-in for boss, owner (chats ops, wa-x; expires 2023-11-16 22:13 UTC)")

	signer, err := webchat.NewSigner(testWebchatAuthKey)
	require.NoError(t, err)
	in := issueSignIn(t, cfg, "boss", "--owner", "--name", "The Boss", "--chat", "ops", "--chat", "wa-x", "--ttl", "48h")
	user, err := signer.Verify(in.bearer, webchat.KindUser, time.Now())
	require.NoError(t, err)
	assert.Equal(t, "boss", user.Sub)
	assert.Equal(t, "The Boss", user.Name)
	assert.True(t, user.Owner)
	assert.Equal(t, []string{"ops", "wa-x"}, user.Chats)
	assert.InDelta(t, time.Now().Add(48*time.Hour).Unix(), user.ExpiresAt, 5)

	link, err := url.Parse(in.link)
	require.NoError(t, err)
	assert.Equal(t, "http://10.0.0.5:8080/login", link.Scheme+"://"+link.Host+link.Path, "the gateway's own address when REPLYFLOW_WEBCHAT_URL is unset")
	login, err := signer.Verify(link.Query().Get("t"), webchat.KindLogin, time.Now())
	require.NoError(t, err)
	assert.Equal(t, "boss", login.Sub)
	assert.InDelta(t, time.Now().Add(webchat.LoginLinkTTL).Unix(), login.ExpiresAt, 5, "a link is good for 15 minutes")

	t.Setenv("REPLYFLOW_WEBCHAT_URL", "https://chat.example/")
	webchatOf(cfg).URL = "https://chat.example/"
	assert.True(t, strings.HasPrefix(issueSignIn(t, cfg, "alice").link, "https://chat.example/login?t=v1."))
	assert.True(t, strings.HasPrefix(issueSignIn(t, cfg, "alice", "--url", "http://127.0.0.1:9").link, "http://127.0.0.1:9/login?t="))
}

// A plain token reaches its sender's own chat only and says so; a token
// for every chat is asked for with --all-chats, and its output warns.
func TestWebchatTokenCommandScopesTokensToChats(t *testing.T) {
	cfg := testConfig(t).withOwnPlatforms()
	webchatOf(cfg).Auth, webchatOf(cfg).AuthKey = "token", testWebchatAuthKey
	signer, err := webchat.NewSigner(testWebchatAuthKey)
	require.NoError(t, err)
	now := time.Now()

	var out bytes.Buffer
	require.NoError(t, webchatCommand([]string{"token", "alice"}, cfg, &out, io.Discard, now))
	assert.Contains(t, out.String(), `only the chat "alice"`, "a plain token says which one chat it reaches")
	user, err := signer.Verify(issueSignIn(t, cfg, "alice").bearer, webchat.KindUser, now)
	require.NoError(t, err)
	assert.False(t, user.AllChats)
	assert.True(t, user.AllowsChat("alice"))
	assert.False(t, user.AllowsChat("bob"), "a token made without --chat does not reach another user's chat")

	out.Reset()
	require.NoError(t, webchatCommand([]string{"token", "ops", "--all-chats"}, cfg, &out, io.Discard, now))
	assert.Contains(t, out.String(), "EVERY chat")
	assert.Contains(t, out.String(), "read and post in any user's chat", "the output says plainly what it grants")
	user, err = signer.Verify(issueSignIn(t, cfg, "ops", "--all-chats").bearer, webchat.KindUser, now)
	require.NoError(t, err)
	assert.True(t, user.AllChats)
	assert.True(t, user.AllowsChat("bob"))

	err = webchatCommand([]string{"token", "ops", "--all-chats", "--chat", "room"}, cfg, &out, io.Discard, now)
	assert.ErrorContains(t, err, "--all-chats and --chat", "both at once is refused")
}

func TestWebchatTokenCommandExplainsWhatIsWrong(t *testing.T) {
	cfg := testConfig(t).withOwnPlatforms()
	var out bytes.Buffer
	err := webchatCommand([]string{"token", "alice"}, cfg, &out, &out, time.Now())
	require.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH_KEY is not set")
	assert.ErrorContains(t, err, "openssl rand -base64 32")
	assert.Empty(t, out.String(), "nothing is printed without a key")

	webchatOf(cfg).AuthKey = testWebchatAuthKey
	for _, args := range [][]string{{}, {"tokens", "alice"}, {"token"}, {"token", "alice", "bob"}} {
		assert.ErrorContains(t, webchatCommand(args, cfg, &out, &out, time.Now()), "usage: replyflow webchat token", "%q", args)
	}
	assert.ErrorContains(t, webchatCommand([]string{"token", "a b"}, cfg, &out, &out, time.Now()), "sender ID")
	assert.ErrorContains(t, webchatCommand([]string{"token", "alice", "--ttl", "-1h"}, cfg, &out, &out, time.Now()), "must not be negative")

	out.Reset()
	require.NoError(t, webchatCommand([]string{"token", "alice"}, cfg, io.Discard, &out, time.Now()))
	assert.Contains(t, out.String(), "REPLYFLOW_WEBCHAT_AUTH=none here", "a token for a gateway that ignores tokens says so")
}

func TestWebchatAuthSettingsAreValidated(t *testing.T) {
	t.Setenv("REPLYFLOW_WEBCHAT_AUTH", "open")
	t.Setenv("REPLYFLOW_WEBCHAT_AUTH_KEY", "too-short")
	cfg, err := readConfig("replyflow")
	require.NoError(t, err)
	err = cfg.validate()
	assert.ErrorContains(t, err, `REPLYFLOW_WEBCHAT_AUTH must be token or none, got "open"`)
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH_KEY is 9 bytes, at least 32")
}

func TestWebchatGatewayRefusesAnOpenWebChat(t *testing.T) {
	anywhere, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	t.Cleanup(func() { anywhere.Close() })
	loopback, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Close() })

	cfg := testConfig(t) // none mode
	err = serveGateway(context.Background(), anywhere, temporalServer.Client(), cfg, quietLogger(cfg))
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH=none is allowed only on a loopback address")

	cfg = cfg.withOwnPlatforms()
	webchatOf(cfg).Auth = "token"
	err = serveGateway(context.Background(), loopback, temporalServer.Client(), cfg, quietLogger(cfg))
	assert.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_AUTH_KEY is not set: generate one with `openssl rand -base64 32`")
	assert.ErrorContains(t, err, "on a loopback address only, set REPLYFLOW_WEBCHAT_AUTH=none")
}

func TestWebchatDevSignsNoOneInOnLoopbackUnlessTold(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	anywhere := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	fresh := func() Config {
		cfg := testConfig(t).withOwnPlatforms()
		webchatOf(cfg).Auth = "token" // the default
		return cfg
	}
	t.Setenv("REPLYFLOW_WEBCHAT_AUTH", "")

	cfg := fresh()
	devWebchatAuth(cfg, loopback)
	assert.Equal(t, "none", webchatOf(cfg).Auth)
	assert.Contains(t, webchatSignIn(cfg), "no sign-in (loopback only: anyone on this machine may speak as anyone; set REPLYFLOW_WEBCHAT_AUTH=token to require tokens)")
	assert.NoError(t, checkWebchatListener(cfg, loopback))

	cfg = fresh()
	devWebchatAuth(cfg, anywhere)
	assert.Equal(t, "token", webchatOf(cfg).Auth, "off loopback dev needs tokens")
	assert.ErrorContains(t, checkWebchatListener(cfg, anywhere), "REPLYFLOW_WEBCHAT_AUTH_KEY is not set")

	t.Setenv("REPLYFLOW_WEBCHAT_AUTH", "token")
	cfg = fresh()
	devWebchatAuth(cfg, loopback)
	assert.Equal(t, "token", webchatOf(cfg).Auth, "set explicitly, token mode stays")
	assert.Contains(t, webchatSignIn(cfg), "replyflow webchat token <you>")
}
