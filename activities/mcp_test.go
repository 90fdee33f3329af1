package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

// The test binary is also the stdio MCP server of these tests: started
// with mcpServerEnv set, it serves testMCPServer on stdin/stdout.
const (
	mcpServerEnv = "REPLYFLOW_TEST_MCP_SERVER"
	mcpMarkerEnv = "REPLYFLOW_TEST_MCP_MARKER"
	mcpSecretEnv = "REPLYFLOW_TEST_MCP_SECRET"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) != "" {
		if err := testMCPServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type queryIn struct {
	Q string `json:"q" jsonschema:"what to look up"`
}

type noIn struct{}

// testMCPServer has a read-only tool (lookup), a writing one (create),
// one that fails with the server's secret in its text (fail), one that
// tells its process ID (pid), and two that end the process mid-call:
// crash_once (read-only, the first time only, per marker file) and
// crash_write (writing, every time).
func testMCPServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Look something up", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in queryIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + in.Q}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create", Description: "Create something"},
		func(_ context.Context, _ *mcp.CallToolRequest, in queryIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "created " + in.Q}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("backend refused token %s", os.Getenv(mcpSecretEnv))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "big", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", 3*maxToolOutput)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "huge_schema", Annotations: readOnly, InputSchema: map[string]any{
		"type": "object", "description": strings.Repeat("s", maxMCPSchema),
	}}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "pid", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash_once", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			marker := os.Getenv(mcpMarkerEnv)
			if _, err := os.Stat(marker); err != nil {
				_ = os.WriteFile(marker, nil, 0o644)
				os.Exit(3)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "survived"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash_write"},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			f, _ := os.OpenFile(os.Getenv(mcpMarkerEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			_, _ = f.WriteString("x")
			_ = f.Close()
			os.Exit(3)
			return nil, nil, nil
		})
	return srv
}

// stdioMCP configures the test binary as a stdio server named "t".
func stdioMCP(t *testing.T, tools map[string]MCPToolOverride) (*Activities, string) {
	marker := filepath.Join(t.TempDir(), "marker")
	t.Setenv(mcpServerEnv, "1")
	t.Setenv(mcpMarkerEnv, marker)
	t.Setenv(mcpSecretEnv, "s3cr3t-token-value")
	file := mcpFile{Servers: []MCPServerDef{{
		Name: "t", Command: os.Args[0],
		Env:   []string{mcpServerEnv, mcpMarkerEnv, mcpSecretEnv},
		Tools: tools,
	}}}
	data, err := json.Marshal(file)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	m, err := LoadMCP(path, slog.Default())
	require.NoError(t, err)
	t.Cleanup(m.Close)
	m.Start(t.Context())
	tools2, err := LoadTools("")
	require.NoError(t, err)
	return &Activities{Tools: tools2.WithMCP(m), Logger: slog.Default()}, marker
}

func runMCP(t *testing.T, acts *Activities, name, args string) (pipeline.ToolResult, error) {
	return acts.RunTool(t.Context(), pipeline.ToolInvocation{TurnID: "turn", Call: declared(acts, pipeline.ToolCall{ID: "c1", Name: name, Arguments: args})})
}

func specNames(tools *Tools) []string {
	var names []string
	for _, s := range tools.specs() {
		names = append(names, s.Name)
	}
	return names
}

func TestMCPReadOnlyCallAndApprovals(t *testing.T) {
	acts, _ := stdioMCP(t, map[string]MCPToolOverride{"pid": {RequiresApproval: ptr(true)}, "crash_write": {Hidden: true}})
	names := specNames(acts.Tools)
	assert.Contains(t, names, "t__lookup")
	assert.Contains(t, names, "t__create")
	assert.NotContains(t, names, "t__crash_write", "a hidden tool is not offered")

	res, err := runMCP(t, acts, "t__lookup", `{"q":"weather"}`)
	require.NoError(t, err)
	assert.Equal(t, "found weather", res.Output)
	assert.False(t, res.IsError)

	// What the session reads of each call's tool: whether a person
	// approves it (a read-only tool runs without; any other by default;
	// the file may tighten a read-only one), the retry policy and the
	// name in the UI.
	for _, c := range []struct {
		name     string
		approval bool
		attempts int
	}{{"t__lookup", false, mcpReadOnlyAttempts}, {"t__create", true, 1}, {"t__pid", true, mcpReadOnlyAttempts}} {
		call := pipeline.ToolCall{Name: c.name}
		acts.Tools.declare(&call)
		assert.Equal(t, c.approval, call.RequiresApproval, c.name)
		assert.Equal(t, c.attempts, call.Attempts, c.name)
		assert.Equal(t, "mcp t."+strings.TrimPrefix(c.name, "t__"), call.Label)
		assert.Equal(t, pipeline.Duration(30*time.Second), call.Timeout, c.name)
	}
	unknown := pipeline.ToolCall{Name: "t__nope"}
	acts.Tools.declare(&unknown)
	assert.Equal(t, pipeline.ToolCall{Name: "t__nope"}, unknown, "a tool nobody declares gets nothing")
}

func TestMCPServerKilledIsRestartedOnNextCall(t *testing.T) {
	acts, _ := stdioMCP(t, nil)
	res, err := runMCP(t, acts, "t__pid", `{}`)
	require.NoError(t, err)
	pid, err := strconv.Atoi(res.Output)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	// The next call may still go to the dead process (its end not yet
	// seen); the read-only call then fails as retryable, and the
	// attempts its declaration gives Temporal reach a new process.
	call := pipeline.ToolCall{Name: "t__pid"}
	acts.Tools.declare(&call)
	for attempt := 1; ; attempt++ {
		res, err = runMCP(t, acts, "t__pid", `{}`)
		if err == nil {
			break
		}
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.False(t, appErr.NonRetryable(), "attempt %d: %v", attempt, err)
		require.Less(t, attempt, call.Attempts, "no attempt Temporal would make reached a new process: %v", err)
	}
	assert.NotEqual(t, strconv.Itoa(pid), res.Output, "a new process answers")
	assert.False(t, res.IsError)
}

func TestMCPCrashMidCall(t *testing.T) {
	acts, marker := stdioMCP(t, nil)
	// Read-only: the attempt fails as retryable, and Temporal's next
	// attempt is answered by a new process.
	_, err := runMCP(t, acts, "t__crash_once", `{}`)
	var retryable *temporal.ApplicationError
	require.ErrorAs(t, err, &retryable)
	assert.False(t, retryable.NonRetryable(), "a read-only call is made again: %v", err)
	res, err := runMCP(t, acts, "t__crash_once", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "survived", res.Output)

	// Writing: reported, not made again, and not retried by Temporal.
	require.NoError(t, os.Remove(marker))
	_, err = runMCP(t, acts, "t__crash_write", `{}`)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable(), "the server may have acted: %v", err)
	assert.Contains(t, err.Error(), "not made again")
	made, err := os.ReadFile(marker)
	require.NoError(t, err)
	assert.Equal(t, "x", string(made), "the writing call ran once")
}

func TestMCPResultAndSchemaAreBounded(t *testing.T) {
	acts, _ := stdioMCP(t, nil)
	assert.NotContains(t, specNames(acts.Tools), "t__huge_schema")
	res, err := runMCP(t, acts, "t__big", `{}`)
	require.NoError(t, err)
	assert.Len(t, res.Output, maxToolOutput+len("\n[output truncated]"))
	assert.True(t, strings.HasSuffix(res.Output, "[output truncated]"))
}

// TestMCPRestartBackoff: a server that fails to start again is not tried
// at every call, but is once its backoff has passed.
func TestMCPRestartBackoff(t *testing.T) {
	srv := testMCPServer()
	m := newMCP(slog.Default())
	t.Cleanup(m.Close)
	s := m.add(MCPServerDef{Name: "mem", Timeout: pipeline.Duration(10 * time.Second)})
	var down atomic.Bool
	var starts atomic.Int32
	var serverSide atomic.Pointer[mcp.ServerSession]
	s.transport = func() (mcp.Transport, error) {
		starts.Add(1)
		if down.Load() {
			return nil, errors.New("exec: no such file")
		}
		client, server := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(t.Context(), server, nil)
		serverSide.Store(ss)
		return client, err
	}
	m.Start(t.Context())
	tools, err := LoadTools("")
	require.NoError(t, err)
	acts := &Activities{Tools: tools.WithMCP(m), Logger: slog.Default()}

	down.Store(true)
	require.NoError(t, serverSide.Load().Close())
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		gone := s.session == nil
		s.mu.Unlock()
		if gone {
			break
		}
		require.True(t, time.Now().Before(deadline), "the ended session was not dropped")
		time.Sleep(5 * time.Millisecond)
	}
	_, err = runMCP(t, acts, "mem__lookup", `{"q":"a"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "next attempt in")
	assert.Equal(t, int32(2), starts.Load(), "one attempt to start it again, then the backoff")

	down.Store(false)
	for {
		res, err := runMCP(t, acts, "mem__lookup", `{"q":"a"}`)
		if err == nil {
			assert.Equal(t, "found a", res.Output)
			break
		}
		require.True(t, time.Now().Before(deadline), "not started again after its backoff: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMCPErrorIsRedacted(t *testing.T) {
	acts, _ := stdioMCP(t, nil)
	res, err := runMCP(t, acts, "t__fail", `{}`)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "backend refused token [redacted]")
	assert.NotContains(t, res.Output, "s3cr3t")
}

func TestMCPToolListChangeIsPickedUp(t *testing.T) {
	srv := testMCPServer()
	m := newMCP(slog.Default())
	t.Cleanup(m.Close)
	s := m.add(MCPServerDef{Name: "mem", Timeout: pipeline.Duration(10 * time.Second)})
	s.transport = func() (mcp.Transport, error) {
		client, server := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(t.Context(), server, nil); err != nil {
			return nil, err
		}
		return client, nil
	}
	m.Start(t.Context())
	tools, err := LoadTools("")
	require.NoError(t, err)
	tools.WithMCP(m)
	require.Contains(t, specNames(tools), "mem__lookup")
	require.NotContains(t, specNames(tools), "mem__added")

	mcp.AddTool(srv, &mcp.Tool{Name: "added", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "new"}}}, nil, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for !contains(specNames(tools), "mem__added") {
		require.True(t, time.Now().Before(deadline), "the changed list was not picked up")
		time.Sleep(10 * time.Millisecond)
	}
	acts := &Activities{Tools: tools, Logger: slog.Default()}
	res, err := runMCP(t, acts, "mem__added", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "new", res.Output)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestMCPFileRules(t *testing.T) {
	write := func(body string) string {
		path := filepath.Join(t.TempDir(), "mcp.json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	for name, body := range map[string]string{
		"literal header":  `{"servers":[{"name":"a","url":"https://x","headers":{"Authorization":"Bearer abc"}}]}`,
		"both kinds":      `{"servers":[{"name":"a","url":"https://x","command":"x"}]}`,
		"neither":         `{"servers":[{"name":"a"}]}`,
		"bad name":        `{"servers":[{"name":"a__b","command":"x"}]}`,
		"twice":           `{"servers":[{"name":"a","command":"x"},{"name":"a","command":"y"}]}`,
		"unknown setting": `{"servers":[{"name":"a","command":"x","envs":["A"]}]}`,
		"writing retried": `{"servers":[{"name":"a","command":"x","tools":{"send":{"read_only":false,"attempts":3}}}]}`,
		"attempts range":  `{"servers":[{"name":"a","command":"x","tools":{"get":{"attempts":11}}}]}`,
		"oauth on stdio":  `{"servers":[{"name":"a","command":"x","oauth":{"client_id":"env:A","client_secret":"env:B"}}]}`,
		"oauth literal":   `{"servers":[{"name":"a","url":"https://x","oauth":{"client_id":"abc","client_secret":"env:B"}}]}`,
		"oauth no secret": `{"servers":[{"name":"a","url":"https://x","oauth":{"client_id":"env:A"}}]}`,
		"oauth + header":  `{"servers":[{"name":"a","url":"https://x","headers":{"authorization":"env:T"},"oauth":{"client_id":"env:A","client_secret":"env:B"}}]}`,
		"oauth issuer":    `{"servers":[{"name":"a","url":"https://x","oauth":{"client_id":"env:A","client_secret":"env:B","issuer":"auth.example"}}]}`,
	} {
		_, err := LoadMCP(write(body), nil)
		assert.Error(t, err, name)
	}
	_, err := LoadMCP(write(`{"servers":[{"name":"a","url":"https://x","oauth":{"client_id":"env:A","client_secret":"s3cret-literal"}}]}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server "a": oauth client_secret must be "env:NAME"`)
	assert.NotContains(t, err.Error(), "s3cret-literal")
	_, err = LoadMCP(write(`{"servers":[{"name":"a","command":"x","oauth":{"client_id":"env:A","client_secret":"env:B"}}]}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oauth is for Streamable HTTP servers")
	m, err := LoadMCP(write(`{"servers":[{"name":"gh","url":"https://x","headers":{"Authorization":"env:GH_TOKEN"}}]}`), nil)
	require.NoError(t, err)
	m.Close()
	m, err = LoadMCP(write(`{"servers":[{"name":"gh","url":"https://x","oauth":{"client_id":"env:A","client_secret":"env:B","issuer":"https://auth.example"}}]}`), nil)
	require.NoError(t, err)
	m.Close()
}

func TestPrefixedToolName(t *testing.T) {
	assert.Equal(t, "gh__create_issue", prefixedToolName("gh", "create_issue"))
	assert.Equal(t, "gh__a_b_c", prefixedToolName("gh", "a.b/c"))
	long := prefixedToolName("gh", strings.Repeat("x", 100))
	assert.Len(t, long, maxToolName)
	assert.NotEqual(t, long, prefixedToolName("gh", strings.Repeat("x", 101)), "long names stay distinct")
}

func TestMCPUnreachableServerIsNotFatal(t *testing.T) {
	m := newMCP(slog.Default())
	t.Cleanup(m.Close)
	s := m.add(MCPServerDef{Name: "down", Timeout: pipeline.Duration(time.Second)})
	s.transport = func() (mcp.Transport, error) { return nil, errors.New("refused") }
	m.Start(t.Context())
	tools, err := LoadTools("")
	require.NoError(t, err)
	tools.WithMCP(m)
	assert.NotContains(t, specNames(tools), "down__lookup")
}

func ptr[T any](v T) *T { return &v }

func TestMCPStreamableHTTPHeadersAndExpiredSession(t *testing.T) {
	t.Setenv("REPLYFLOW_TEST_MCP_TOKEN", "Bearer h77p-secret")
	srv := testMCPServer()
	newHandler := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	var current atomic.Pointer[http.Handler]
	h := newHandler()
	current.Store(&h)
	var auth atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		(*current.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"servers":[{"name":"web","url":"`+hs.URL+`","headers":{"Authorization":"env:REPLYFLOW_TEST_MCP_TOKEN"}}]}`), 0o644))
	m, err := LoadMCP(path, slog.Default())
	require.NoError(t, err)
	t.Cleanup(m.Close)
	m.Start(t.Context())
	tools, err := LoadTools("")
	require.NoError(t, err)
	acts := &Activities{Tools: tools.WithMCP(m), Logger: slog.Default()}

	res, err := runMCP(t, acts, "web__lookup", `{"q":"a"}`)
	require.NoError(t, err)
	assert.Equal(t, "found a", res.Output)
	assert.Equal(t, "Bearer h77p-secret", auth.Load())

	// The server forgets its sessions (a restart): the next call, even a
	// writing one, opens a new session, as the old one never saw it.
	h = newHandler()
	current.Store(&h)
	res, err = runMCP(t, acts, "web__create", `{"q":"b"}`)
	require.NoError(t, err)
	assert.Equal(t, "created b", res.Output)
}

// A Streamable HTTP call whose connection drops under it may have reached
// the server: a read-only call fails for Temporal to make again, a
// writing one fails for good, and the model is never told the server
// answered.
func TestMCPDroppedHTTPCallIsRetriedOnlyWhenReadOnly(t *testing.T) {
	srv := testMCPServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var drop atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if drop.Load() && strings.Contains(string(body), `"tools/call"`) {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"servers":[{"name":"web","url":"`+hs.URL+`"}]}`), 0o644))
	m, err := LoadMCP(path, slog.Default())
	require.NoError(t, err)
	t.Cleanup(m.Close)
	m.Start(t.Context())
	tools, err := LoadTools("")
	require.NoError(t, err)
	acts := &Activities{Tools: tools.WithMCP(m), Logger: slog.Default()}
	_, err = runMCP(t, acts, "web__lookup", `{"q":"a"}`)
	require.NoError(t, err, "connected")

	drop.Store(true)
	for name, retryable := range map[string]bool{"web__lookup": true, "web__create": false} {
		_, err := runMCP(t, acts, name, `{"q":"b"}`)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr, name)
		assert.Equal(t, retryable, !appErr.NonRetryable(), "%s: %v", name, err)
	}
	drop.Store(false)
	res, err := runMCP(t, acts, "web__lookup", `{"q":"c"}`)
	require.NoError(t, err)
	assert.Equal(t, "found c", res.Output, "the next attempt is answered")
}

func TestMCPStderrIsLoggedRedactedAtDebug(t *testing.T) {
	t.Setenv("REPLYFLOW_TEST_MCP_KEY", "k3y-value-123")
	var logs strings.Builder
	m := newMCP(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	s := m.add(MCPServerDef{Name: "e", Command: "x", Env: []string{"REPLYFLOW_TEST_MCP_KEY"}})
	w := &stderrLines{s: s}
	_, _ = w.Write([]byte("starting with k3y-value-123\nhalf a "))
	_, _ = w.Write([]byte(strings.Repeat("z", 2*maxStderrLine)))
	out := logs.String()
	assert.Contains(t, out, `line="starting with [redacted]"`)
	assert.NotContains(t, out, "k3y-value-123")
	assert.Equal(t, 3, strings.Count(out, "MCP server stderr"), "a long line is logged in parts of its bound")
	assert.LessOrEqual(t, len(w.buf), maxStderrLine)
}
