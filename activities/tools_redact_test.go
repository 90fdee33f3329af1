package activities

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// A tool that echoes its request in a successful answer (a debug
// endpoint, an error reported with 200) does not hand the model, and so
// the chat, the token it was called with.
func TestASuccessfulToolAnswerHasTheToolsSecretsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"you_sent":"`+r.Header.Get("Authorization")+`","ok":true}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("ECHO_TOKEN", "Bearer tok-secret-123")
	tools, err := LoadTools(writeTools(t, []ToolDef{{Name: "echo", URL: srv.URL + "/echo", Headers: map[string]string{"Authorization": "env:ECHO_TOKEN"}}}))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}
	v, err := newActivityEnv(acts).ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: declared(acts, pipeline.ToolCall{ID: "c1", Name: "echo", Arguments: `{}`})})
	require.NoError(t, err)
	var res pipeline.ToolResult
	require.NoError(t, v.Get(&res))
	assert.False(t, res.IsError)
	assert.NotContains(t, res.Output, "tok-secret-123")
	assert.Contains(t, res.Output, `"ok":true`, "the rest of the answer is kept")
	assert.Contains(t, res.Output, "[redacted]")
}

func TestASuccessfulMCPAnswerHasTheServersSecretsRedacted(t *testing.T) {
	s := &mcpServer{secrets: []string{"tok-secret-123"}}
	out, isError, err := s.resultText(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you sent tok-secret-123; all good"}}})
	require.NoError(t, err)
	assert.False(t, isError)
	assert.Equal(t, "you sent [redacted]; all good", out)
}
