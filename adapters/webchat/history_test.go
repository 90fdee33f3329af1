package webchat

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// gatewayOn serves a web chat whose log is the store at dsn, as a
// gateway does; each call is another gateway (another process's store
// connection, another hub).
func gatewayOn(t *testing.T, dsn string) *httptest.Server {
	db, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	srv, err := NewServer(ServerConfig{Sink: &recordingSink{}, BotToken: token, Auth: AuthNone, ChatLog: db})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	return ts
}

// history is GET /api/chats/{chat}/history as "type data" lines.
func history(t *testing.T, base, chat string) []string {
	t.Helper()
	resp, err := http.Get(base + "/api/chats/" + chat + "/history")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct{ Events []HistoryEvent }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var out []string
	for _, ev := range body.Events {
		out = append(out, ev.Type+" "+string(ev.Data))
	}
	return out
}

// The store is the chat's truth: what one gateway showed, another one
// (or the same after a restart) replays, with the edits and reactions as
// they stand, and a send retried through another gateway is shown once.
func TestHistoryIsTheStoresAndSharedByTwoGateways(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "store.db")
	a, b := gatewayOn(t, dsn), gatewayOn(t, dsn)
	ctx := context.Background()
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	toA, err := NewClient(a.URL, token, nil)
	require.NoError(t, err)
	toB, err := NewClient(b.URL, token, nil)
	require.NoError(t, err)

	code, body := post(t, a.URL+"/api/chats/room/messages", "", `{"message_id":"m1","sender_id":"alice","text":"**hi**"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.NoError(t, toA.SetReaction(ctx, pipeline.ReactionChange{Session: session, MessageID: "m1", State: pipeline.ReactionThinking}))
	d := pipeline.Delivery{Session: session, IdempotencyKey: "turn1/0", Text: "Hel", ReplyTo: "m1"}
	id, err := toA.Send(ctx, d)
	require.NoError(t, err)
	again, err := toB.Send(ctx, d)
	require.NoError(t, err)
	assert.Equal(t, id, again, "a send retried through the other gateway answers the first ID")
	require.NoError(t, toB.Edit(ctx, pipeline.Edit{Session: session, PlatformMessageID: id, Text: "Hello, *Alice*"}))
	require.NoError(t, toB.SetReaction(ctx, pipeline.ReactionChange{Session: session, MessageID: "m1", State: pipeline.ReactionDone}))

	want := []string{
		`user {"message_id":"m1","sender_id":"alice","text":"**hi**"}`,
		`reaction {"message_id":"m1","emoji":"✅","state":""}`,
		`message {"message_id":"` + id + `","text":"Hello, *Alice*","html":"\u003cp\u003eHello, \u003cem\u003eAlice\u003c/em\u003e\u003c/p\u003e\n"}`,
	}
	assert.Equal(t, want, history(t, a.URL, "room"))
	assert.Equal(t, want, history(t, b.URL, "room"))
	restarted := gatewayOn(t, dsn)
	assert.Equal(t, want, history(t, restarted.URL, "room"), "a gateway started later replays it")
	assert.Empty(t, history(t, restarted.URL, "other"))

	// A retried user message (same message_id) stays one.
	code, body = post(t, b.URL+"/api/chats/room/messages", "", `{"message_id":"m1","sender_id":"alice","text":"**hi**"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	assert.Len(t, history(t, a.URL, "room"), 3)
}

// failingLog is a store that cannot be reached.
type failingLog struct{ adapters.ChatLog }

func (failingLog) AddChatMessage(context.Context, adapters.ChatLogMessage) (string, bool, error) {
	return "", false, assert.AnError
}
func (failingLog) SetChatReaction(context.Context, string, string, string) error {
	return assert.AnError
}
func (failingLog) ChatMessages(context.Context, string) ([]adapters.ChatLogMessage, error) {
	return nil, assert.AnError
}
func (failingLog) ChatMessage(context.Context, string, string) (adapters.ChatLogMessage, bool, error) {
	return adapters.ChatLogMessage{}, false, assert.AnError
}

// Without its store the web chat still takes users' messages (they are
// answered; only the history misses them), and refuses the bot's changes
// with a 503 the worker retries, as they would not survive a reload.
func TestAnUnreachableStoreIsRetriedByTheWorkerAndSaidByTheHistory(t *testing.T) {
	sink := &recordingSink{}
	srv, err := NewServer(ServerConfig{Sink: sink, BotToken: token, Auth: AuthNone, ChatLog: failingLog{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	code, body := post(t, ts.URL+"/api/chats/room/messages", "", `{"message_id":"m1","sender_id":"alice","text":"hi"}`)
	assert.Equal(t, http.StatusAccepted, code, body)
	assert.Len(t, sink.accepted, 1)

	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	_, err = c.Send(context.Background(), pipeline.Delivery{Session: pipeline.SessionKey{Channel: Channel, Chat: "room"}, IdempotencyKey: "k", Text: "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REPLYFLOW_STORE_DSN")
	var classified *adapters.Error
	require.ErrorAs(t, err, &classified)
	assert.Equal(t, adapters.Transient, classified.Kind)

	resp, err := http.Get(ts.URL + "/api/chats/room/history")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestMarkdownIsRenderedAndNothingInItRuns(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"**bold** and `code`", "<p><strong>bold</strong> and <code>code</code></p>\n"},
		{"- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"},
		{"```go\nfmt.Println(\"<b>\")\n```", "<pre><code class=\"language-go\">fmt.Println(&#34;&lt;b&gt;&#34;)\n</code></pre>\n"},
		{"[site](https://example.org)", `<p><a href="https://example.org" rel="nofollow noreferrer noopener" target="_blank">site</a></p>` + "\n"},
	} {
		assert.Equal(t, c.want, renderMarkdown(c.in), c.in)
	}
	for _, attack := range []string{
		`<script>window.pwned=1</script>`,
		`<img src=x onerror="window.pwned=1">`,
		`[click](javascript:window.pwned=1)`,
		`<a href="javascript:alert(1)">x</a>`,
		"```\n</code></pre><script>window.pwned=1</script>\n```",
		`![x](https://tracker.example/pixel.png)`,
		`<iframe src="https://evil.example"></iframe>`,
		`<p style="background:url(https://x)">styled</p>`,
	} {
		got := renderMarkdown(attack)
		for _, bad := range []string{"<script", "onerror", "javascript:", "<img", "<iframe", "style="} {
			assert.NotContains(t, strings.ToLower(got), bad, "%s rendered as %s", attack, got)
		}
	}
}
