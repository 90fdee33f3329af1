package activities

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// runToolCall runs one call of the named tool through the RunTool activity.
func runToolCall(t *testing.T, acts *Activities, name, args string) pipeline.ToolResult {
	t.Helper()
	v, err := newActivityEnv(acts).ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: declared(acts, pipeline.ToolCall{ID: "c-" + name, Name: name, Arguments: args})})
	require.NoError(t, err, "a failing tool is a result, not an activity failure")
	var r pipeline.ToolResult
	require.NoError(t, v.Get(&r))
	return r
}

// A redirect would carry the tool's URL, with its query (an API key), in
// Referer to wherever the tool points: no tool request sends one.
func TestToolRedirectsSendNoReferer(t *testing.T) {
	var mu sync.Mutex
	var referers []string
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		referers = append(referers, r.URL.Path+" referer="+r.Header.Get("Referer"))
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		_, _ = io.WriteString(w, "other")
	}))
	t.Cleanup(other.Close)
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "home")
		}
	}))
	t.Cleanup(tool.Close)
	tools, err := LoadTools(writeTools(t, []ToolDef{
		{Name: "any", URL: tool.URL + "/away?api_key=q-secret", Method: "GET", Redirects: RedirectsAny},
		{Name: "local", URL: tool.URL + "/moved?api_key=q-secret", Method: "GET"},
	}))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}

	assert.Equal(t, "other", runToolCall(t, acts, "any", `{}`).Output)
	assert.Equal(t, "home", runToolCall(t, acts, "local", `{}`).Output)
	assert.Equal(t, []string{"/away referer=", "/steal referer=", "/moved referer=", "/here referer="}, referers)
}

// A configured tool dials only public addresses unless its entry sets
// allow_private: the check is on the address dialed, so a host name that
// resolves to loopback, a literal address and a redirect are all caught.
func TestToolsRefuseNonPublicDestinations(t *testing.T) {
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		_, _ = io.WriteString(w, "inside")
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	defs := []ToolDef{
		{Name: "by_name", URL: "http://localhost:" + port + "/by_name"},
		{Name: "literal", URL: srv.URL + "/literal"},
		{Name: "unspecified", URL: "http://0.0.0.0:" + port + "/unspecified"},
		{Name: "allowed", URL: srv.URL + "/allowed", AllowPrivate: true},
	}
	tools, err := LoadTools(writeToolsAsGiven(t, defs))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}

	// Only loopback destinations are dialed: a broken check then reaches
	// nothing but this machine. The other classes are checked without a
	// dial, by the classification the dialer refuses with.
	for addr, class := range map[string]string{"169.254.169.254": "link-local", "10.0.0.1": "private", "100.64.0.1": "reserved", "::ffff:192.168.1.1": "private", "203.0.113.9": ""} {
		assert.Equal(t, class, classifyAddr(netip.MustParseAddr(addr)), addr)
	}
	for name, class := range map[string]string{"by_name": "loopback", "literal": "loopback", "unspecified": "unspecified"} {
		res := runToolCall(t, acts, name, `{}`)
		assert.True(t, res.IsError, name)
		assert.Contains(t, res.Output, "tool "+name+" ", "the refusal names the tool")
		assert.Contains(t, res.Output, class+" address", name)
		assert.Contains(t, res.Output, "allow_private", "and says what would allow it")
		assert.NotContains(t, res.Output, port, "and never the URL or the address")
		assert.NotContains(t, res.Output, "169.254")
	}
	res := runToolCall(t, acts, "allowed", `{}`)
	assert.Equal(t, "inside", res.Output, "allow_private lets a tool reach its private server")
	for _, p := range []string{"/by_name", "/literal", "/unspecified"} {
		_, hit := hits.Load(p)
		assert.False(t, hit, "%s reached the server", p)
	}
}

// A tool allowed only public addresses is redirected to a loopback one:
// the redirect is refused when dialed. The tool's own server stands in
// for a public one (the test treats 127.0.0.1 as public); the redirect
// goes to 127.0.0.2, loopback like any other.
func TestAToolsRedirectToLoopbackIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	var inside sync.Map
	internal := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Store(r.URL.Path, true)
		_, _ = io.WriteString(w, "internal secrets")
	}))
	internal.Listener.Close()
	internal.Listener = ln
	internal.Start()
	t.Cleanup(internal.Close)
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/admin", http.StatusFound)
	}))
	t.Cleanup(tool.Close)
	tools, err := LoadTools(writeToolsAsGiven(t, []ToolDef{{Name: "hop", URL: tool.URL + "/go", Redirects: RedirectsAny}}))
	require.NoError(t, err)
	standIn := netip.MustParseAddr("127.0.0.1")
	tools.publicAddr = func(a netip.Addr) bool { return a == standIn || classifyAddr(a) == "" }
	acts := &Activities{Tools: tools, Logger: slog.Default()}

	res := runToolCall(t, acts, "hop", `{}`)
	assert.True(t, res.IsError, res.Output)
	assert.Contains(t, res.Output, "tool hop ")
	assert.Contains(t, res.Output, "loopback address")
	assert.NotContains(t, res.Output, "127.0.0.2")
	_, hit := inside.Load("/admin")
	assert.False(t, hit, "the redirect reached the internal server")
}

func TestClassifyAddr(t *testing.T) {
	for addr, class := range map[string]string{
		"8.8.8.8": "", "2606:4700::1111": "", "203.0.113.9": "",
		"127.0.0.1": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private", "fd00::1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local", "::ffff:169.254.169.254": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified",
		"100.100.100.200": "reserved", "224.0.0.1": "multicast", "255.255.255.255": "reserved",
	} {
		assert.Equal(t, class, classifyAddr(netip.MustParseAddr(addr)), addr)
	}
}

// A failing tool's answer may reflect the tool's secrets: the log gets its
// status and size only, the model a status line and a short, redacted
// excerpt.
func TestAToolsErrorBodyIsNotLoggedAndReachesTheModelBoundedAndRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "bad credentials: header k-secret-hdr, bearer tok-abc123, query q-secret-val, encoded a%2Fb%3Dc; "+strings.Repeat("x", 20<<10))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TOOL_KEY", "k-secret-hdr")
	tools, err := LoadTools(writeTools(t, []ToolDef{{Name: "api", URL: srv.URL + "/v1?api_key=q-secret-val&sig=a/b=c", Method: "GET",
		Headers: map[string]string{"X-Api-Key": "env:TOOL_KEY", "Authorization": "Bearer tok-abc123"}}}))
	require.NoError(t, err)
	var logs bytes.Buffer
	acts := &Activities{Tools: tools, Logger: slog.New(slog.NewTextHandler(&logs, nil))}

	res := runToolCall(t, acts, "api", `{}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "tool api answered HTTP 401")
	assert.Contains(t, res.Output, "bad credentials", "an excerpt helps the model")
	assert.LessOrEqual(t, len(res.Output), 512, "bounded: %q", res.Output)
	for _, secret := range []string{"k-secret-hdr", "tok-abc123", "q-secret-val", "a%2Fb%3Dc"} {
		assert.NotContains(t, res.Output, secret)
	}
	assert.Contains(t, res.Output, "[redacted]")

	line := logs.String()
	assert.Contains(t, line, "tool call failed")
	assert.Contains(t, line, "status=401")
	assert.Contains(t, line, "bytes=")
	assert.NotContains(t, line, "bad credentials", "no body text in the log")
	assert.NotContains(t, line, "xxxx")
}
