package activities

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

const (
	oauthIDEnv     = "REPLYFLOW_TEST_OAUTH_ID"
	oauthSecretEnv = "REPLYFLOW_TEST_OAUTH_SECRET"
	oauthClientID  = "replyflow-worker"
	oauthSecret    = "cl13nt-s3cret-value"
)

// fakeAS is an authorization server: its metadata (RFC 8414) and a token
// endpoint for the client credentials grant that checks the client's ID
// and secret. A refusal echoes the secret it was sent, as a careless
// server would, so redaction is put to the test.
type fakeAS struct {
	srv       *httptest.Server
	expiresIn int

	mu       sync.Mutex
	secret   string          // the secret it accepts
	valid    map[string]bool // tokens it granted and has not revoked
	issued   []string
	requests int    // to the token endpoint
	redirect string // where the token endpoint redirects, if set
}

func newFakeAS(t *testing.T, expiresIn int) *fakeAS {
	as := &fakeAS{secret: oauthSecret, valid: map[string]bool{}, expiresIn: expiresIn}
	mux := http.NewServeMux()
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                as.srv.URL,
			"token_endpoint":                        as.srv.URL + "/token",
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post"},
			"code_challenge_methods_supported":      []string{"S256"},
			"response_types_supported":              []string{"code"},
		})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"unsupported_grant_type"}`))
			return
		}
		id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		if u, p, ok := r.BasicAuth(); ok {
			id, secret = u, p
		}
		as.mu.Lock()
		defer as.mu.Unlock()
		as.requests++
		if as.redirect != "" {
			http.Redirect(w, r, as.redirect, http.StatusTemporaryRedirect)
			return
		}
		if id != oauthClientID || secret != as.secret {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "client secret " + secret + " is wrong"})
			return
		}
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		token := fmt.Sprintf("at-%d-%s", len(as.issued)+1, hex.EncodeToString(b))
		as.valid[token] = true
		as.issued = append(as.issued, token)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": as.expiresIn})
	})
	return as
}

func (as *fakeAS) isValid(token string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.valid[token]
}

func (as *fakeAS) revokeAll() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.valid)
}

func (as *fakeAS) tokens() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.issued...)
}

func (as *fakeAS) rotate(secret string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.secret = secret
}

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type oauthFixture struct {
	as      *fakeAS
	refused atomic.Int32 // MCP requests answered 401
	acts    *Activities
	logs    *syncBuffer
}

// oauthSetup changes a fixture from its defaults.
type oauthSetup struct {
	issuer   string // pinned in the file; the fake's own if empty
	redirect string // where the fake's token endpoint redirects
}

// newOAuthFixture starts an MCP server that takes only the fake
// authorization server's tokens, pointing at it by Protected Resource
// Metadata (RFC 9728), and a worker's MCP with the server "web" set up
// for the client credentials grant, its logs captured.
func newOAuthFixture(t *testing.T, envSecret string, expiresIn int, setup ...oauthSetup) *oauthFixture {
	f := &oauthFixture{as: newFakeAS(t, expiresIn), logs: &syncBuffer{}}
	opts := append(setup, oauthSetup{})[0]
	f.as.redirect = opts.redirect
	t.Setenv(oauthIDEnv, oauthClientID)
	t.Setenv(oauthSecretEnv, envSecret)

	srv := testMCPServer()
	// A server that puts the token it was sent in its error text.
	mcp.AddTool(srv, &mcp.Tool{Name: "echo_token", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("token refused: %s", req.Extra.Header.Get("Authorization"))
		})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	mcpURL := hs.URL + "/mcp"
	prmURL := hs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: mcpURL, AuthorizationServers: []string{f.as.srv.URL},
	}))
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if !f.as.isValid(token) {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: oauthClientID, Expiration: time.Now().Add(time.Hour)}, nil
	}
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || !f.as.isValid(token) {
			f.refused.Add(1)
		}
		protected.ServeHTTP(w, r)
	}))

	file := fmt.Sprintf(`{"servers":[{"name":"web","url":%q,"oauth":{"client_id":"env:%s","client_secret":"env:%s","issuer":%q}}]}`,
		mcpURL, oauthIDEnv, oauthSecretEnv, cmp.Or(opts.issuer, f.as.srv.URL))
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o644))
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := LoadMCP(path, logger)
	require.NoError(t, err)
	t.Cleanup(m.Close)
	m.Start(t.Context())
	tools, err := LoadTools("")
	require.NoError(t, err)
	f.acts = &Activities{Tools: tools.WithMCP(m), Logger: logger}
	return f
}

// assertNoSecretLogged checks the captured logs hold neither the client
// secret nor any token the authorization server granted.
func (f *oauthFixture) assertNoSecretLogged(t *testing.T) {
	t.Helper()
	logs := f.logs.String()
	assert.NotContains(t, logs, oauthSecret)
	for _, token := range f.as.tokens() {
		assert.NotContains(t, logs, token)
	}
}

func TestMCPOAuthClientCredentials(t *testing.T) {
	f := newOAuthFixture(t, oauthSecret, 3600)
	// Start met a 401, was granted a token and listed the tools with it.
	require.Contains(t, specNames(f.acts.Tools), "web__lookup", f.logs.String())
	require.Len(t, f.as.tokens(), 1)
	assert.GreaterOrEqual(t, f.refused.Load(), int32(1), "the first request went without a token")

	res, err := runMCP(t, f.acts, "web__lookup", `{"q":"a"}`)
	require.NoError(t, err)
	assert.Equal(t, "found a", res.Output)
	assert.Len(t, f.as.tokens(), 1, "the token is reused")

	// A server that echoes the token: the model reads it redacted.
	res, err = runMCP(t, f.acts, "web__echo_token", `{}`)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "token refused: Bearer [redacted]")
	assert.NotContains(t, res.Output, f.as.tokens()[0])

	// Revoked: the call is refused with 401, a new token is granted and
	// the call made again with it; a writing call too, as the server did
	// not run the refused one.
	f.as.revokeAll()
	refused := f.refused.Load()
	res, err = runMCP(t, f.acts, "web__create", `{"q":"b"}`)
	require.NoError(t, err)
	assert.Equal(t, "created b", res.Output)
	assert.Len(t, f.as.tokens(), 2, "one new token")
	assert.Greater(t, f.refused.Load(), refused, "the revoked token was refused")

	// Revoked under calls in flight: one grant serves them all.
	f.as.revokeAll()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			res, err := runMCP(t, f.acts, "web__lookup", fmt.Sprintf(`{"q":"%d"}`, i))
			if err == nil && res.Output != fmt.Sprintf("found %d", i) {
				err = fmt.Errorf("answered %q", res.Output)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "call %d", i)
	}
	assert.Len(t, f.as.tokens(), 3, "one grant for the calls in flight")
	f.assertNoSecretLogged(t)
}

// The token endpoint's refusal names the server and the variables to
// check, never the secret, in what the model reads and in the logs.
func TestMCPOAuthWrongSecret(t *testing.T) {
	const wrong = "wr0ng-s3cret-value"
	f := newOAuthFixture(t, wrong, 3600)
	assert.NotContains(t, specNames(f.acts.Tools), "web__lookup")
	logs := f.logs.String()
	assert.Contains(t, logs, "MCP server web asked for OAuth and no token was granted")
	assert.Contains(t, logs, "env:"+oauthSecretEnv)
	assert.Contains(t, logs, "invalid_client")
	assert.Contains(t, logs, "client secret [redacted] is wrong")
	assert.NotContains(t, logs, wrong)

	// The right secret in the environment is read at the next connect,
	// once the backoff has passed: no restart.
	t.Setenv(oauthSecretEnv, oauthSecret)
	deadline := time.Now().Add(10 * time.Second)
	for !contains(specNames(f.acts.Tools), "web__lookup") {
		require.True(t, time.Now().Before(deadline), "not connected with the corrected secret: %s", f.logs.String())
		time.Sleep(20 * time.Millisecond)
	}
	res, err := runMCP(t, f.acts, "web__lookup", `{"q":"a"}`)
	require.NoError(t, err)
	assert.Equal(t, "found a", res.Output)

	// The secret is rotated at the authorization server and the token
	// revoked: a writing call is refused, reported as not run, and not
	// made again.
	f.as.rotate("n3w-s3cret-value")
	f.as.revokeAll()
	_, err = runMCP(t, f.acts, "web__create", `{"q":"b"}`)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable(), "%v", err)
	assert.Contains(t, err.Error(), "MCP server web asked for OAuth and no token was granted")
	assert.Contains(t, err.Error(), "did not run")
	assert.NotContains(t, err.Error(), oauthSecret)
	assert.Contains(t, f.logs.String(), "MCP tool call failed")

	// The worker's environment gets the new secret: the next grant reads
	// it, on the same connection.
	t.Setenv(oauthSecretEnv, "n3w-s3cret-value")
	res, err = runMCP(t, f.acts, "web__create", `{"q":"c"}`)
	require.NoError(t, err)
	assert.Equal(t, "created c", res.Output)
	f.assertNoSecretLogged(t)
	assert.NotContains(t, f.logs.String(), wrong)
	assert.NotContains(t, f.logs.String(), "n3w-s3cret-value")
}

// A token that expires is renewed by its grant's token source before the
// server refuses it, although the call that made the grant has ended.
func TestMCPOAuthExpiredTokenIsRenewed(t *testing.T) {
	// Within oauth2's 10 s margin: every request renews the token.
	f := newOAuthFixture(t, oauthSecret, 1)
	require.Contains(t, specNames(f.acts.Tools), "web__lookup", f.logs.String())
	refused, granted := f.refused.Load(), len(f.as.tokens())
	for _, q := range []string{"a", "b"} {
		res, err := runMCP(t, f.acts, "web__lookup", `{"q":"`+q+`"}`)
		require.NoError(t, err)
		assert.Equal(t, "found "+q, res.Output)
	}
	assert.Greater(t, len(f.as.tokens()), granted, "renewed")
	assert.Equal(t, refused, f.refused.Load(), "renewed before the server refused it: %s", f.logs.String())
	f.assertNoSecretLogged(t)
}

// With the issuer pinned, a server pointing at another authorization
// server never gets the secret sent there.
func TestMCPOAuthIssuerPinned(t *testing.T) {
	f := newOAuthFixture(t, oauthSecret, 3600, oauthSetup{issuer: "https://auth.example"})
	assert.NotContains(t, specNames(f.acts.Tools), "web__lookup")
	assert.Contains(t, f.logs.String(), "does not match pre-registered credentials issuer")
	f.as.mu.Lock()
	defer f.as.mu.Unlock()
	assert.Zero(t, f.as.requests, "no token request to an authorization server not pinned")
}

// A token endpoint that redirects elsewhere does not get the secret sent
// on: Go's client would resend the POST's body there.
func TestMCPOAuthSecretDoesNotFollowRedirect(t *testing.T) {
	var stolen atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { stolen.Add(1) }))
	t.Cleanup(thief.Close)
	f := newOAuthFixture(t, oauthSecret, 3600, oauthSetup{redirect: thief.URL + "/token"})
	assert.NotContains(t, specNames(f.acts.Tools), "web__lookup")
	assert.Contains(t, f.logs.String(), "not followed")
	assert.Zero(t, stolen.Load(), "the secret went to another origin")
	f.as.mu.Lock()
	defer f.as.mu.Unlock()
	assert.NotZero(t, f.as.requests, "the token endpoint was asked")
}
