package main

import (
	"bytes"
	"context"
	"io"
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
	"go.temporal.io/sdk/converter"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
)

// callingModel calls one tool until the prompt holds its result, then
// answers with what came back.
type callingModel struct{ tool, args string }

func (callingModel) Name() string { return "test/calling" }

func (m callingModel) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	for _, msg := range p.Messages {
		if msg.Role == "tool" {
			return models.Completion{Text: "done: " + msg.Text}, nil
		}
	}
	return models.Completion{ToolCalls: []pipeline.ToolCall{{ID: "call-1", Name: m.tool, Arguments: m.args}}}, nil
}

type mcpQuery struct {
	Q string `json:"q"`
}

// mcpDocsServer is a Streamable HTTP MCP server with a read-only tool
// (lookup) and a writing one (create), counting the calls of each. While
// dropLookups is above zero, a lookup's request is cut off (its
// connection closed, the tool not run) and the count goes down. expire
// makes the server forget its HTTP sessions, as a restart does.
func mcpDocsServer(t *testing.T) (url string, lookups, creates, dropLookups *atomic.Int32, expire func()) {
	lookups, creates, dropLookups = new(atomic.Int32), new(atomic.Int32), new(atomic.Int32)
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Look a page up", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpQuery) (*mcp.CallToolResult, any, error) {
			lookups.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "page " + in.Q}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create", Description: "Create a page"},
		func(_ context.Context, _ *mcp.CallToolRequest, in mcpQuery) (*mcp.CallToolResult, any, error) {
			creates.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "created " + in.Q}}}, nil, nil
		})
	var handler atomic.Pointer[mcp.StreamableHTTPHandler]
	expire = func() {
		handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}
	expire()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && dropLookups.Load() > 0 {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if strings.Contains(string(body), `"tools/call"`) && strings.Contains(string(body), `"lookup"`) {
				dropLookups.Add(-1)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		handler.Load().ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, lookups, creates, dropLookups, expire
}

func mcpConfig(t *testing.T, url string) Config {
	cfg := testConfig(t)
	cfg.MCPFile = filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(cfg.MCPFile, []byte(`{"servers":[{"name":"docs","url":"`+url+`"}]}`), 0o644))
	cfg.Owners = []string{"webchat:boss"}
	return cfg
}

// TestMCPToolsInATurn: a read-only MCP tool runs without approval, and
// an attempt whose connection dropped is made again by Temporal; a
// writing one waits for a proposal's approval and then runs once, on a
// new HTTP session when the server forgot the old one, or, rejected,
// never.
func TestMCPToolsInATurn(t *testing.T) {
	url, lookups, creates, dropLookups, expire := mcpDocsServer(t)
	s := startStack(t, mcpConfig(t, url))

	stop := s.startWorker(callingModel{tool: "docs__lookup", args: `{"q":"faq"}`})
	dropLookups.Store(1)
	read, write, reject := uniqueChat("mcp-read"), uniqueChat("mcp-write"), uniqueChat("mcp-reject")
	events := subscribe(t, s.baseURL, read)
	code, _ := s.post(read, `{"message_id":"r1","sender_id":"alice","text":"find the faq"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Equal(t, "done: page faq", seen[len(seen)-1].Text)
	assert.Equal(t, int32(1), lookups.Load(), "the dropped attempt never reached the tool")
	assert.Zero(t, dropLookups.Load(), "the first attempt was dropped")
	key := pipeline.SessionKey{Channel: "webchat", Chat: read}
	var summary string
	var attempt int32
	for _, ev := range s.history(key) {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == pipeline.ActivityRunTool {
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(ev.GetUserMetadata().GetSummary(), &summary))
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && summary != "" && attempt == 0 {
			attempt = a.GetAttempt()
		}
	}
	assert.True(t, strings.HasPrefix(summary, "mcp docs.lookup "), "the UI names the call: %q", summary)
	assert.Equal(t, int32(2), attempt, "Temporal's second attempt ran it")
	recordHistoryOf(t, s.client, key, "mcp_read_only_retried")
	stop()

	s.startWorker(callingModel{tool: "docs__create", args: `{"q":"news"}`})
	events = subscribe(t, s.baseURL, write)
	code, _ = s.post(write, `{"message_id":"w1","sender_id":"alice","text":"create a news page"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen = events.collectUntil(t, 30*time.Second, isButtonsMessage)
	proposalMsg := seen[len(seen)-1].MessageID
	assert.Contains(t, seen[len(seen)-1].Text, "docs__create")
	assert.Zero(t, creates.Load(), "a writing MCP tool waits for approval")

	expire() // the server restarted while the proposal waited
	assert.Equal(t, http.StatusAccepted, s.press(write, "boss", proposalMsg, "approve:p1"))
	seen = events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Equal(t, "done: created news", seen[len(seen)-1].Text)
	assert.Equal(t, int32(1), creates.Load(), "approved, it runs once")

	events = subscribe(t, s.baseURL, reject)
	code, _ = s.post(reject, `{"message_id":"x1","sender_id":"alice","text":"create another"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen = events.collectUntil(t, 30*time.Second, isButtonsMessage)
	assert.Equal(t, http.StatusAccepted, s.press(reject, "boss", seen[len(seen)-1].MessageID, "reject:p1"))
	events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" && strings.HasPrefix(ev.Text, "done:") })
	assert.Equal(t, int32(1), creates.Load(), "rejected, it never runs")
}
