package activities

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

type seenCall struct {
	Method, Path, Query, Body, Auth, Key string
}

func toolServer(t *testing.T) (*httptest.Server, func() []seenCall) {
	var mu sync.Mutex
	var calls []seenCall
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, seenCall{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key")})
		mu.Unlock()
		if r.URL.Path == "/broken" {
			http.Error(w, "upstream exploded", http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenCall { mu.Lock(); defer mu.Unlock(); return append([]seenCall(nil), calls...) }
}

// declared is a call as the session hands it to RunTool: declared by
// AgentTurn, and approved where its declaration needs it.
func declared(acts *Activities, call pipeline.ToolCall) pipeline.ToolCall {
	acts.Tools.declare(&call)
	return call
}

// writeTools writes a tools file whose tools may reach private addresses:
// the test servers are on loopback, which configured tools are refused by
// default. writeToolsAsGiven keeps each entry's own setting.
func writeTools(t *testing.T, defs []ToolDef) string {
	allowed := make([]ToolDef, len(defs))
	for i, d := range defs {
		d.AllowPrivate = true
		allowed[i] = d
	}
	return writeToolsAsGiven(t, allowed)
}

func writeToolsAsGiven(t *testing.T, defs []ToolDef) string {
	data, err := json.Marshal(defs)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tools.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestRunToolCallsTheHTTPToolOnce(t *testing.T) {
	srv, calls := toolServer(t)
	t.Setenv("WEATHER_TOKEN", "secret-123")
	tools, err := LoadTools(writeTools(t, []ToolDef{
		{Name: "weather", URL: srv.URL + "/weather", Headers: map[string]string{"Authorization": "env:WEATHER_TOKEN"}, RequiresApproval: true},
		{Name: "search", URL: srv.URL + "/search", Method: "get"},
		{Name: "broken", URL: srv.URL + "/broken"},
	}))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}
	env := newActivityEnv(acts)
	run := func(call pipeline.ToolCall) pipeline.ToolResult {
		v, err := env.ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: declared(acts, call)})
		require.NoError(t, err, "a failing tool is a result, not an activity failure")
		var r pipeline.ToolResult
		require.NoError(t, v.Get(&r))
		return r
	}

	res := run(pipeline.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`})
	assert.Equal(t, pipeline.ToolResult{CallID: "c1", Name: "weather", Output: `{"ok":true}`}, res)
	res = run(pipeline.ToolCall{ID: "c2", Name: "search", Arguments: `{"q":"go temporal"}`})
	assert.False(t, res.IsError)
	res = run(pipeline.ToolCall{ID: "c3", Name: "broken", Arguments: `{}`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "HTTP 502: upstream exploded")
	res = run(pipeline.ToolCall{ID: "c4", Name: "nope", Arguments: `{}`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, `no tool named "nope"`)
	res = run(pipeline.ToolCall{ID: "c5", Name: "weather", Arguments: `not json`})
	assert.True(t, res.IsError)

	got := calls()
	require.Len(t, got, 3, "one request per call; the unknown tool and the bad arguments reach no server")
	assert.Equal(t, seenCall{"POST", "/weather", "", `{"city":"Oslo"}`, "secret-123", "turn-1/c1"}, got[0])
	assert.Equal(t, seenCall{"GET", "/search", "q=go+temporal", "", "", "turn-1/c2"}, got[1])
	declared := pipeline.ToolCall{Name: "weather"}
	tools.declare(&declared)
	assert.True(t, declared.RequiresApproval, "the file's requires_approval reaches the call")
	names := []string{}
	for _, s := range tools.specs() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{pipeline.SkipResponseTool, pipeline.DisengageTool, "weather", "search", "broken"}, names)
}

func TestLoadToolsRejectsBadFiles(t *testing.T) {
	for _, defs := range [][]ToolDef{
		{{Name: "", URL: "http://x"}},
		{{Name: pipeline.SkipResponseTool, URL: "http://x"}},
		{{Name: "a", URL: "http://x"}, {Name: "a", URL: "http://y"}},
		{{Name: "a", URL: "ftp://x"}},
		{{Name: "a", URL: "http://x", Redirects: "sometimes"}},
	} {
		_, err := LoadTools(writeTools(t, defs))
		assert.Error(t, err, "%+v", defs)
	}
	tools, err := LoadTools("")
	require.NoError(t, err)
	assert.Len(t, tools.specs(), 2, "only the built-ins without a file")
}

// A tool's configured headers carry its secrets: a redirect to another
// origin is refused by default, followed without them when allowed, and
// a redirect within the tool's origin keeps them.
func TestToolRedirectsDoNotCarryTheToolsSecretsElsewhere(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string // the X-Api-Key each request to the other origin carried
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		_, _ = io.WriteString(w, "other")
	}))
	t.Cleanup(other.Close)
	var home []string
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		home = append(home, r.URL.Path+" "+r.Header.Get("X-Api-Key"))
		mu.Unlock()
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
	t.Setenv("TOOL_KEY", "k-secret")
	key := map[string]string{"X-Api-Key": "env:TOOL_KEY"}
	tools, err := LoadTools(writeTools(t, []ToolDef{
		{Name: "default", URL: tool.URL + "/away", Headers: key},
		{Name: "any", URL: tool.URL + "/away", Headers: key, Redirects: RedirectsAny},
		{Name: "none", URL: tool.URL + "/moved", Headers: key, Redirects: RedirectsNone},
		{Name: "local", URL: tool.URL + "/moved", Headers: key},
	}))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}
	env := newActivityEnv(acts)
	run := func(name string) pipeline.ToolResult {
		v, err := env.ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: declared(acts, pipeline.ToolCall{ID: name, Name: name, Arguments: `{}`})})
		require.NoError(t, err)
		var r pipeline.ToolResult
		require.NoError(t, v.Get(&r))
		return r
	}

	res := run("default")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "redirected to another origin")
	assert.NotContains(t, res.Output, other.URL+"/steal", "the error names the origin, not a URL that may carry secrets")
	res = run("any")
	assert.Equal(t, "other", res.Output)
	res = run("none")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "HTTP 302")
	res = run("local")
	assert.Equal(t, "home", res.Output)

	assert.Equal(t, []string{""}, elsewhere, "only the allowed redirect reached the other origin, without the key")
	assert.Equal(t, []string{"/away k-secret", "/away k-secret", "/moved k-secret", "/moved k-secret", "/here k-secret"}, home)
}

func TestAGETToolsConfiguredQueryCannotBeOverridden(t *testing.T) {
	srv, calls := toolServer(t)
	tools, err := LoadTools(writeTools(t, []ToolDef{{Name: "search", URL: srv.URL + "/search?scope=public&key=abc", Method: "GET"}}))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}
	env := newActivityEnv(acts)
	for _, args := range []string{`{"scope":"private"}`, `{"SCOPE":"private"}`, `{"Key":"mine"}`, `{"q":"x"}`} {
		v, err := env.ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "t", Call: declared(acts, pipeline.ToolCall{ID: "c", Name: "search", Arguments: args})})
		require.NoError(t, err)
		var r pipeline.ToolResult
		require.NoError(t, v.Get(&r))
		if args == `{"q":"x"}` {
			assert.False(t, r.IsError, r.Output)
			continue
		}
		assert.True(t, r.IsError, "%s: a case variant shadows the fixed parameter on a server that ignores case", args)
		assert.Contains(t, r.Output, "is fixed by the tool's configuration", args)
	}
	got := calls()
	require.Len(t, got, 1, "no overriding call reached the server")
	assert.Equal(t, "key=abc&q=x&scope=public", got[0].Query)
}
