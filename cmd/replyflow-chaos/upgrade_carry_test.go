package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// payTool is an HTTP tool that needs approval, "pay", written to a tools
// file in dir for REPLYFLOW_TOOLS_FILE; calls counts the calls it got.
func payTool(t *testing.T, dir string) (toolsFile string, calls *atomic.Int32) {
	t.Helper()
	calls = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.WriteString(w, `{"paid":true}`)
	}))
	t.Cleanup(srv.Close)
	// The fake tool is on loopback, which a tool must be allowed to reach.
	defs, err := json.Marshal([]activities.ToolDef{{Name: "pay", Description: "pay someone", URL: srv.URL, RequiresApproval: true, AllowPrivate: true}})
	require.NoError(t, err)
	toolsFile = filepath.Join(dir, "tools.json")
	require.NoError(t, os.WriteFile(toolsFile, defs, 0o644))
	return toolsFile, calls
}

// payCall is the model's step that asks to pay.
var payCall = modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: "call-1", Name: "pay", Arguments: `{"amount":5,"to":"bob"}`}}}

// awaitProposal waits, up to a minute, for the proposal message with
// buttons that answers msg.
func (c telegramChat) awaitProposal(t *testing.T, msg int) telegramtest.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var proposal telegramtest.Message
	require.NoError(t, c.fake.WaitFor(ctx, func() bool {
		for _, m := range c.answers(msg) {
			if len(m.Buttons) > 0 {
				proposal = m
				return true
			}
		}
		return false
	}), "chat %d: no proposal answers message %d", c.chat.ID, msg)
	return proposal
}

// user is the chat's person (the fake's private chats have the user's ID).
func (c telegramChat) user() telegramtest.User {
	return telegramtest.User{ID: c.chat.ID, FirstName: "Tess"}
}

// awaitState waits, up to 30 s, until the session's state query answers
// a snapshot that satisfies cond, and returns it.
func awaitState(t *testing.T, c client.Client, key pipeline.SessionKey, what string, cond func(workflows.Snapshot) bool) workflows.Snapshot {
	t.Helper()
	var snap workflows.Snapshot
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(context.Background(), key.WorkflowID(), "", workflows.QueryState)
		snap = workflows.Snapshot{}
		return err == nil && v.Get(&snap) == nil && cond(snap)
	}, 30*time.Second, 200*time.Millisecond, "%s: %s", key.WorkflowID(), what)
	return snap
}

// requestsIn are the model requests of the chat's turns (the system text
// names the chat), in the order the model got them.
func requestsIn(model *modeltest.Server, chat telegramChat) []modeltest.Request {
	var out []modeltest.Request
	for _, r := range model.Requests() {
		if strings.Contains(r.System, " in chat "+strconv.FormatInt(chat.chat.ID, 10)+" (") {
			out = append(out, r)
		}
	}
	return out
}

// asking are the chat's model requests about the user's text: those
// whose newest user message is it (a tool's result may follow it).
func asking(model *modeltest.Server, chat telegramChat, text string) []modeltest.Request {
	var out []modeltest.Request
	for _, r := range requestsIn(model, chat) {
		for i := len(r.Messages) - 1; i >= 0; i-- {
			if strings.HasPrefix(r.Messages[i], "user: ") {
				if strings.HasSuffix(r.Messages[i], "] "+text) {
					out = append(out, r)
				}
				break
			}
		}
	}
	return out
}

// turnsOf labels a request's messages "role: text", each text without
// its envelope ("[telegram …] ") or the fake's "echo: " and its echoed
// envelope: what the model was told was said, and by whom.
func turnsOf(r modeltest.Request) []string {
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		role, _, _ := strings.Cut(m, ": ")
		out[i] = role + ": " + lastLabel(m)
	}
	return out
}

// lastLabel is the text of a message after its last envelope.
func lastLabel(m string) string {
	if i := strings.LastIndex(m, "] "); i >= 0 {
		return m[i+2:]
	}
	_, text, _ := strings.Cut(m, ": ")
	return text
}
