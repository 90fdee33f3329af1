package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// MCPOAuth lets a Streamable HTTP server's tools be reached with an OAuth
// 2.0 client credentials grant: when the server answers 401, the worker
// discovers its authorization server (Protected Resource Metadata, then
// Authorization Server Metadata), asks it for a token with the client's
// ID and secret, and sends that token until the server refuses it again.
// No person and no browser take part, which suits a headless worker.
type MCPOAuth struct {
	// ClientID and ClientSecret are "env:NAME", read from the worker's
	// environment at connect time.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// Issuer, when set, is the only authorization server the secret is
	// sent to: one the server points at with another issuer is refused.
	Issuer string `json:"issuer"`
}

const (
	// mcpOAuthHTTPTimeout bounds each discovery and token request; a
	// grant makes at most a handful of them, and the call's own time
	// bounds the whole.
	mcpOAuthHTTPTimeout = 10 * time.Second
	// maxOAuthRedirects bounds the redirects one discovery or token
	// request follows, all within its origin.
	maxOAuthRedirects = 3
	// maxOAuthTokens bounds the access tokens remembered for redaction:
	// the current one and a few it replaced, which a slow answer may
	// still echo.
	maxOAuthTokens = 4
)

// errMCPAuth marks a request the server refused for want of a token the
// authorization server would not give: the server did not run it, and
// another connection would not fare better.
var errMCPAuth = errors.New("not authorized")

// mcpAuthError says why a server's grant failed and what to check. It
// stands for the SDK's chain of wrappings around it, so the cause is not
// cut from a bounded error text.
type mcpAuthError struct {
	server, cause string
	def           MCPOAuth
}

func (e *mcpAuthError) Error() string {
	return fmt.Sprintf("MCP server %s asked for OAuth and no token was granted: %s (check the client credentials in %s and %s, and the authorization server)",
		e.server, e.cause, e.def.ClientID, e.def.ClientSecret)
}

func (e *mcpAuthError) Is(target error) bool { return target == errMCPAuth }

// asMCPAuth finds a failed grant in err's chain.
func asMCPAuth(err error) (*mcpAuthError, bool) {
	var ae *mcpAuthError
	return ae, errors.As(err, &ae)
}

// checkMCPOAuth is the file's rule for a server's oauth setting.
func checkMCPOAuth(d MCPServerDef) error {
	o := d.OAuth
	if o == nil {
		return nil
	}
	if d.URL == "" {
		return errors.New("oauth is for Streamable HTTP servers (a url); a stdio server takes its secrets through env")
	}
	for _, v := range []struct{ field, value string }{{"client_id", o.ClientID}, {"client_secret", o.ClientSecret}} {
		if name, ok := strings.CutPrefix(v.value, "env:"); !ok || name == "" {
			return fmt.Errorf("oauth %s must be \"env:NAME\": secrets come from the environment, not the file", v.field)
		}
	}
	for k := range d.Headers {
		if strings.EqualFold(k, "Authorization") {
			return errors.New("oauth and an Authorization header would both set the Authorization header: keep one")
		}
	}
	if o.Issuer != "" {
		if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("oauth issuer must be the authorization server's http(s) URL, got %q", o.Issuer)
		}
	}
	return nil
}

// mcpOAuth is one server's OAuth handler, shared by its connections so a
// token outlives the connection that fetched it. It wraps the SDK's
// client credentials handler, which is not safe for concurrent use and
// keeps the context of the request that triggered the grant for later
// renewals: here grants are made one at a time, under a context that
// lives as long as the worker's MCP servers.
type mcpOAuth struct {
	server string
	def    MCPOAuth
	logger *slog.Logger
	// ctx lives as long as the MCP; renewals of a token run under it.
	ctx context.Context
	// client makes the discovery and token requests.
	client *http.Client

	mu         sync.Mutex
	inner      *extauth.ClientCredentialsHandler
	id, secret string             // what inner was made with
	current    string             // the access token sent, "" before the first grant
	tokens     []string           // the recent access tokens, for redaction; at most maxOAuthTokens
	cancel     context.CancelFunc // ends the previous grant's renewals
}

func newMCPOAuth(ctx context.Context, server string, def MCPOAuth, logger *slog.Logger) *mcpOAuth {
	return &mcpOAuth{
		server: server, def: def, logger: logger, ctx: ctx,
		client: &http.Client{Timeout: mcpOAuthHTTPTimeout, CheckRedirect: sameOriginRedirects},
	}
}

// sameOriginRedirects keeps a grant's requests at the origin they were
// sent to: Go's client resends a POST's body on a 307 or 308, and the
// token request's body carries the client secret.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirect from %s to %s not followed: the client's credentials stay with the origin they were sent to", first.Host, req.URL.Host)
	}
	if len(via) > maxOAuthRedirects {
		return fmt.Errorf("more than %d redirects from %s", maxOAuthRedirects, first.Host)
	}
	return nil
}

var _ auth.OAuthHandler = (*mcpOAuth)(nil)

// load reads the client's ID and secret from the environment at each
// connect; changed values (a rotated secret) start over with a new grant.
func (o *mcpOAuth) load() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.loadLocked(); err != nil {
		return fmt.Errorf("MCP server %s: %w", o.server, err)
	}
	return nil
}

func (o *mcpOAuth) loadLocked() error {
	id, err := o.env("client_id", o.def.ClientID)
	if err != nil {
		return err
	}
	secret, err := o.env("client_secret", o.def.ClientSecret)
	if err != nil {
		return err
	}
	if o.inner != nil && id == o.id && secret == o.secret {
		return nil
	}
	o.id, o.secret = id, secret
	return o.resetLocked()
}

func (o *mcpOAuth) env(field, ref string) (string, error) {
	name, _ := strings.CutPrefix(ref, "env:")
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("oauth %s names %s, which is not set in the worker's environment", field, name)
	}
	return v, nil
}

// resetLocked drops the token: the next request goes without one, and
// the server's 401 starts a new grant.
func (o *mcpOAuth) resetLocked() error {
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{
			ClientID:         o.id,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.secret},
			Issuer:           o.def.Issuer,
		},
		HTTPClient: o.client,
	})
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	o.inner, o.current = h, ""
	if o.cancel != nil {
		o.cancel()
		o.cancel = nil
	}
	return nil
}

// TokenSource gives the token to send, nil before the first grant.
func (o *mcpOAuth) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.inner == nil {
		return nil, nil
	}
	ts, err := o.inner.TokenSource(ctx)
	if err != nil || ts == nil {
		return nil, err
	}
	return mcpOAuthTokens{o: o, inner: o.inner, ts: ts}, nil
}

// Authorize makes a grant after the server answered 401 (or 403). A
// request that carried an older token than the current one was refused
// before another call's grant: it is made again with the current token,
// so a revoked token costs one grant, not one per call in flight.
func (o *mcpOAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.current != "" && req.Header.Get("Authorization") != "Bearer "+o.current {
		resp.Body.Close()
		return nil
	}
	// Each grant reads the credentials again: a secret rotated since the
	// connect is used without a new connection.
	if err := o.loadLocked(); err != nil {
		resp.Body.Close()
		return &mcpAuthError{server: o.server, cause: err.Error(), def: o.def}
	}
	// The grant's token source keeps the context it is made under and
	// renews the token with it: it must outlive this call, and end only
	// with the worker or the next grant. The call's end cuts the grant
	// itself short.
	grantCtx, cancel := context.WithCancel(o.ctx)
	stop := context.AfterFunc(ctx, cancel)
	err := o.inner.Authorize(grantCtx, req, resp)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		_ = o.resetLocked()
		return &mcpAuthError{server: o.server, cause: err.Error(), def: o.def}
	}
	if o.cancel != nil {
		o.cancel()
	}
	o.cancel = cancel
	// The grant has fetched its token; reading it again is free.
	if ts, _ := o.inner.TokenSource(ctx); ts != nil {
		if tok, err := ts.Token(); err == nil {
			o.rememberLocked(tok.AccessToken)
		}
	}
	return nil
}

// remember notes the access token that is sent, for redaction and to
// tell a refusal of an older token from one of the current.
func (o *mcpOAuth) remember(token string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rememberLocked(token)
}

func (o *mcpOAuth) rememberLocked(token string) {
	o.current = token
	for _, t := range o.tokens {
		if t == token {
			return
		}
	}
	if len(o.tokens) == maxOAuthTokens {
		o.tokens = o.tokens[1:]
	}
	o.tokens = append(o.tokens, token)
}

// secrets are the values of this server's OAuth that its errors must not
// show: the client secret read at connect time and the recent tokens.
func (o *mcpOAuth) secrets() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, v := range append([]string{o.secret}, o.tokens...) {
		if len(v) >= 4 {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	return out
}

// mcpOAuthTokens is the token source of one grant. A token that cannot be
// renewed (the authorization server refused, or was down) is dropped
// rather than failing the request: the request then goes without a token
// and the server's 401 starts a new grant, whose error says why.
type mcpOAuthTokens struct {
	o     *mcpOAuth
	inner *extauth.ClientCredentialsHandler
	ts    oauth2.TokenSource
}

func (t mcpOAuthTokens) Token() (*oauth2.Token, error) {
	tok, err := t.ts.Token()
	if err != nil {
		t.o.mu.Lock()
		if t.o.inner == t.inner {
			_ = t.o.resetLocked()
		}
		t.o.mu.Unlock()
		t.o.logger.Warn("MCP OAuth token not renewed; the server's next 401 asks for a new one", "server", t.o.server, "error", errorExcerpt([]byte(err.Error()), t.o.secrets()))
		return nil, nil
	}
	t.o.remember(tok.AccessToken)
	return tok, nil
}
