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

func writeTools(t *testing.T, defs []ToolDef) string {
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
		v, err := env.ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: call})
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
	assert.True(t, tools.requiresApproval("weather"))
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
	} {
		_, err := LoadTools(writeTools(t, defs))
		assert.Error(t, err, "%+v", defs)
	}
	tools, err := LoadTools("")
	require.NoError(t, err)
	assert.Len(t, tools.specs(), 2, "only the built-ins without a file")
}
