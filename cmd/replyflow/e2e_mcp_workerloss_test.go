package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// hangingDocsServer is a Streamable HTTP MCP server whose tools (lookup,
// read-only; create, writing) hang on their first call until the caller
// goes away, and answer every later one at once; it counts the calls.
func hangingDocsServer(t *testing.T) (url string, lookups, creates *atomic.Int32) {
	lookups, creates = new(atomic.Int32), new(atomic.Int32)
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	hangFirst := func(ctx context.Context, calls *atomic.Int32, text string) (*mcp.CallToolResult, any, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // the worker that called died with the call
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Look a page up", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpQuery) (*mcp.CallToolResult, any, error) {
			return hangFirst(ctx, lookups, "page "+in.Q)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create", Description: "Create a page"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpQuery) (*mcp.CallToolResult, any, error) {
			return hangFirst(ctx, creates, "created "+in.Q)
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL, lookups, creates
}

// A worker killed (SIGKILL, real processes) while an MCP call runs: the
// call's attempt times out (the tool's own timeout, plus a grace), and a
// read-only call is made again on the next worker, while a writing one
// is not: the model reads that its outcome is unknown and that it may
// have acted (so it asks before calling it again), and the tool ran
// once.
func TestAWorkerKilledMidMCPCall(t *testing.T) {
	t.Parallel()
	url, lookups, creates := hangingDocsServer(t)
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	mcpFile := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.WriteFile(mcpFile, []byte(`{"servers":[{"name":"docs","url":"`+url+`","timeout":"2s",`+
		`"tools":{"create":{"requires_approval":false}}}]}`), 0o644))
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	oa.Push(
		modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: "call-1", Name: "docs__lookup", Arguments: `{"q":"faq"}`}}},
		modeltest.Step{Text: "looked it up"},
		modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: "call-2", Name: "docs__create", Arguments: `{"q":"news"}`}}},
		modeltest.Step{Text: "could not create it"},
	)
	bot := uniqueTelegramID()
	fake := telegramtest.New(fmt.Sprintf("%d:mcp-workerloss", bot))
	t.Cleanup(fake.Close)
	env := harness.Env(temporalServer.FrontendHostPort(), fmt.Sprintf("mcp-workerloss-%d", bot), filepath.Join(dir, "store.db"), fake, map[string]string{
		"MODEL": "openai/gpt-test", "STREAM": "off", "DEBOUNCE": "0s", "LOG_LEVEL": "info", "MCP_FILE": mcpFile,
	})
	env = append(env, "OPENAI_BASE_URL="+oa.URL+"/v1", "OPENAI_API_KEY=test")
	startWorker := realProcesses(t, bin, dir, env)

	chat := telegramtest.Private(uniqueTelegramID())
	worker := startWorker(1)
	answered := func(text string) func() bool {
		return func() bool {
			got := botMessages(fake, chat)
			return len(got) > 0 && got[len(got)-1].Text == text
		}
	}

	// Read-only: made again on the next worker.
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "find the faq"})
	require.Eventually(t, func() bool { return lookups.Load() == 1 }, time.Minute, 10*time.Millisecond, "the lookup reached the server")
	worker.Kill()
	worker = startWorker(2)
	waitOnFake(t, fake.WaitFor, "the answer after the lookup", answered("looked it up"))
	assert.Equal(t, int32(2), lookups.Load(), "the read-only call was made again")
	requests := oa.Requests()
	require.Len(t, requests, 2)
	assert.Contains(t, strings.Join(requests[1].Messages, "\n"), "page faq", "the model read the second attempt's result")

	// Writing: not made again; the model reads that it may have acted.
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "create a news page"})
	require.Eventually(t, func() bool { return creates.Load() == 1 }, time.Minute, 10*time.Millisecond, "the create reached the server")
	worker.Kill()
	startWorker(3)
	waitOnFake(t, fake.WaitFor, "the answer after the create", answered("could not create it"))
	assert.Equal(t, int32(1), creates.Load(), "the writing call ran once")
	requests = oa.Requests()
	require.Len(t, requests, 4)
	assert.Contains(t, strings.Join(requests[3].Messages, "\n"), "the tool's outcome is unknown", "the model read why")
	assert.Contains(t, strings.Join(requests[3].Messages, "\n"), "it may have acted before it stopped. Do not call it again without asking the user.",
		"and that the call may have acted")
}
