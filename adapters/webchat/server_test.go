package webchat

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

type recordingSink struct {
	mu       sync.Mutex
	accepted []pipeline.Inbound
	err      error
}

func (s *recordingSink) Accept(_ context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.accepted = append(s.accepted, in)
	return nil
}

const token = "secret-token"

func newTestServer(t *testing.T, sink adapters.Sink) *httptest.Server {
	srv, err := NewServer(ServerConfig{Sink: sink, BotToken: token, Auth: AuthNone, Now: func() time.Time { return time.Unix(1700000000, 0) }})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	return ts
}

func post(t *testing.T, url, auth, body string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

func TestNewServerRefusesEmptyToken(t *testing.T) {
	_, err := NewServer(ServerConfig{Sink: &recordingSink{}})
	require.ErrorContains(t, err, "REPLYFLOW_WEBCHAT_BOT_TOKEN")
}

func TestUserMessageIsAcceptedOnlyAfterTheSink(t *testing.T) {
	sink := &recordingSink{}
	ts := newTestServer(t, sink)
	code, body := post(t, ts.URL+"/api/chats/room1/messages", "", `{"sender_id":"alice","text":"hi","thread_id":"t1","reply_to":"m0"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, sink.accepted, 1)
	in := sink.accepted[0]
	assert.Contains(t, body, in.MessageID)
	assert.True(t, strings.HasPrefix(in.MessageID, "u-"), "a missing message_id is generated")
	assert.Equal(t, pipeline.Inbound{
		Channel: "webchat", ChatID: "room1", ChatType: pipeline.ChatDirect, MessageID: in.MessageID,
		SenderID: "alice", Text: "hi", ThreadID: "t1", ReplyTo: "m0", ReceivedAt: time.Unix(1700000000, 0).UTC(),
	}, in)

	sink.err = errors.New("temporal unreachable")
	code, body = post(t, ts.URL+"/api/chats/room1/messages", "", `{"message_id":"m9","sender_id":"alice","text":"hi"}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "retry with the same message_id")
}

func TestBadUserMessagesGet4xxWithAReason(t *testing.T) {
	sink := &recordingSink{}
	ts := newTestServer(t, sink)
	cases := []struct {
		chat, body string
		code       int
		reason     string
	}{
		{"room", `not json`, 400, "not a valid message"},
		{"room", `{"sender_id":"a","text":"hi"} {"again":1}`, 400, "data after the JSON object"},
		{"room", `{"sender_id":"a","text":"hi","extra":true}`, 400, "unknown field"},
		{"room", `{"text":"hi"}`, 400, "sender_id is missing"},
		{"room", `{"sender_id":"a","text":""}`, 400, "text is missing"},
		{"room", `{"sender_id":"a","text":"   "}`, 400, "text is empty"},
		{"room", `{"sender_id":"a b","text":"hi"}`, 400, "sender_id contains"},
		{"ro%3Aom", `{"sender_id":"a","text":"hi"}`, 400, "chat contains"},
		{"%2E", `{"sender_id":"a","text":"hi"}`, 400, "is a path segment of its own"},
		{"%2E%2E", `{"sender_id":"a","text":"hi"}`, 400, "is a path segment of its own"},
		{"a%2Fb", `{"sender_id":"a","text":"hi"}`, 400, "chat contains '/'"},
		{"a%00b", `{"sender_id":"a","text":"hi"}`, 400, "chat contains"},
		{strings.Repeat("c", pipeline.MaxIDBytes+1), `{"sender_id":"a","text":"hi"}`, 400, "chat is longer"},
		{"room", `{"sender_id":"a","text":"` + strings.Repeat("x", pipeline.MaxTextBytes+1) + `"}`, 400, "the limit is"},
		{"room", `{"sender_id":"a","text":"` + strings.Repeat("x", maxBodyBytes) + `"}`, 413, "request body too large"},
	}
	for _, c := range cases {
		code, body := post(t, ts.URL+"/api/chats/"+c.chat+"/messages", "", c.body)
		assert.Equal(t, c.code, code, c.body[:min(len(c.body), 60)])
		assert.Contains(t, body, c.reason)
	}
	assert.Empty(t, sink.accepted, "nothing bad reaches Temporal")
}

func TestBotAPINeedsTheToken(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	for _, auth := range []string{"", "Bearer wrong", token} {
		code, body := post(t, ts.URL+"/bot/chats/room/messages", auth, `{"idempotency_key":"k","text":"hi"}`)
		assert.Equal(t, http.StatusUnauthorized, code, auth)
		assert.Contains(t, body, "REPLYFLOW_WEBCHAT_BOT_TOKEN")
	}
}

// A body over its limit gets 413 on every route, not a 400 that reads as
// "fix the JSON": the client must send less, not the same again.
func TestOversizedBodiesAre413OnEveryRoute(t *testing.T) {
	sink := &recordingSink{}
	ts := newTestServer(t, sink)
	big := strings.Repeat("x", maxBodyBytes)
	for _, c := range []struct{ method, path, auth, body string }{
		{http.MethodPost, "/api/chats/room/messages", "", `{"sender_id":"a","text":"` + big + `"}`},
		{http.MethodPost, "/api/chats/room/actions", "", `{"sender_id":"a","message_id":"m1","action":"` + strings.Repeat("a", 8<<10) + `"}`},
		{http.MethodPost, "/bot/chats/room/messages", "Bearer " + token, `{"idempotency_key":"k","text":"` + big + `"}`},
		{http.MethodPatch, "/bot/chats/room/messages/m1", "Bearer " + token, `{"text":"` + big + `"}`},
		{http.MethodPut, "/bot/chats/room/messages/m1/reaction", "Bearer " + token, `{"emoji":"` + big + `"}`},
		{http.MethodPost, "/bot/chats/room/typing", "Bearer " + token, `{"x":"` + big + `"}`},
	} {
		req, err := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", c.auth)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s %s: %s", c.method, c.path, b.String())
		assert.Contains(t, b.String(), "too large", "%s %s", c.method, c.path)
	}
	assert.Empty(t, sink.accepted)
}

// readEvents reads n events (type and data line) from an open stream.
func readEvents(t *testing.T, r *bufio.Reader, n int) []string {
	t.Helper()
	var out []string
	var typ string
	for len(out) < n {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, typ+" "+strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

func openStream(t *testing.T, url, lastID string) *bufio.Reader {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	// A stream that never sends what a test waits for fails it in time.
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return bufio.NewReader(resp.Body)
}

func TestBotActionsReachTheEventStreamThroughTheClient(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	stream := openStream(t, ts.URL+"/api/chats/room/events", "")
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	ctx := context.Background()
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}

	require.NoError(t, c.SetReaction(ctx, pipeline.ReactionChange{Session: session, MessageID: "m1", State: pipeline.ReactionReceived}))
	require.NoError(t, c.Typing(ctx, session, "t1"))
	d := pipeline.Delivery{Session: session, IdempotencyKey: "turn1/0", Text: "hello", ReplyTo: "m1"}
	first, err := c.Send(ctx, d)
	require.NoError(t, err)
	again, err := c.Send(ctx, d)
	require.NoError(t, err)
	assert.Equal(t, first, again, "a retried send returns the first send's ID")
	require.NoError(t, c.SetReaction(ctx, pipeline.ReactionChange{Session: session, MessageID: "m1", State: pipeline.ReactionNone}))

	assert.Equal(t, []string{
		`reaction {"message_id":"m1","emoji":"👀","state":"received"}`,
		`typing {"thread_id":"t1"}`,
		`message {"message_id":"` + first + `","text":"hello","reply_to":"m1","html":"\u003cp\u003ehello\u003c/p\u003e\n"}`,
		`reaction {"message_id":"m1","emoji":"","state":""}`,
	}, readEvents(t, stream, 4), "the repeated send is not shown twice")
}

func TestReconnectingStreamReplaysMissedEvents(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	for _, key := range []string{"a", "b", "c"} {
		_, err := c.Send(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: key, Text: "text " + key})
		require.NoError(t, err)
	}
	// The client saw the first event only; it reconnects with its ID.
	full := openStream(t, ts.URL+"/api/chats/room/events", "x-0")
	all := readEvents(t, full, 3)
	require.Len(t, all, 3, "an ID from another gateway process replays the whole backlog")

	var firstID string
	r := openStream(t, ts.URL+"/api/chats/room/events", "other-epoch-1")
	for firstID == "" {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "id: ") {
			firstID = strings.TrimSpace(strings.TrimPrefix(line, "id: "))
		}
	}
	missed := readEvents(t, openStream(t, ts.URL+"/api/chats/room/events", firstID), 2)
	assert.Contains(t, missed[0], "text b")
	assert.Contains(t, missed[1], "text c")
}

func TestClientClassifiesPlatformErrors(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bot/chats/limited/typing":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/bot/chats/broken/typing":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer ts.Close()
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	cases := map[string]struct {
		kind  adapters.ErrorKind
		after time.Duration
	}{
		"limited": {adapters.RateLimited, 7 * time.Second},
		"broken":  {adapters.Transient, 0},
		"denied":  {adapters.Permanent, 0},
	}
	for chat, want := range cases {
		err := c.Typing(context.Background(), pipeline.SessionKey{Channel: Channel, Chat: chat}, "")
		kind, after := adapters.Classify(err)
		assert.Equal(t, want.kind, kind, chat)
		assert.Equal(t, want.after, after, chat)
	}

	ts.Close()
	err = c.Typing(context.Background(), pipeline.SessionKey{Channel: Channel, Chat: "x"}, "")
	kind, _ := adapters.Classify(err)
	assert.Equal(t, adapters.Transient, kind, "an unreachable gateway is worth retrying")
	assert.ErrorContains(t, err, "is `replyflow gateway` running?")
}

func FuzzDecodeUserMessage(f *testing.F) {
	f.Add("room", `{"sender_id":"alice","text":"hi"}`)
	f.Add("room", `{"message_id":"m1","sender_id":"a","text":"x","thread_id":"t","reply_to":"r"}`)
	f.Add("r:1", `{"sender_id":"","text":"\u0000"}`)
	f.Fuzz(func(t *testing.T, chat, body string) {
		in, err := DecodeUserMessage(chat, strings.NewReader(body), time.Unix(0, 0))
		if err != nil {
			return
		}
		// Whatever is accepted must be a valid, bounded inbound.
		if verr := in.Validate(); verr != nil {
			t.Fatalf("accepted an invalid inbound: %v", verr)
		}
		if in.Channel != Channel || in.ChatID != chat {
			t.Fatalf("accepted %+v for chat %q", in, chat)
		}
	})
}

func TestButtonsEditsAndActions(t *testing.T) {
	sink := &recordingSink{}
	ts := newTestServer(t, sink)
	stream := openStream(t, ts.URL+"/api/chats/room/events", "")
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	buttons := []pipeline.Button{{Text: "Approve", Action: "approve:p1"}}
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: "k", Text: "approve?", Buttons: buttons})
	require.NoError(t, err)
	require.NoError(t, c.Edit(context.Background(), pipeline.Edit{Session: session, PlatformMessageID: id, Text: "approved"}))
	assert.Equal(t, []string{
		`message {"message_id":"` + id + `","text":"approve?","buttons":[{"text":"Approve","action":"approve:p1"}],"html":"\u003cp\u003eapprove?\u003c/p\u003e\n"}`,
		`edit {"message_id":"` + id + `","text":"approved","html":"\u003cp\u003eapproved\u003c/p\u003e\n"}`,
	}, readEvents(t, stream, 2))

	code, body := post(t, ts.URL+"/api/chats/room/actions", "", `{"sender_id":"boss","message_id":"`+id+`","action":"approve:p1","action_id":"a1"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, sink.accepted, 1)
	assert.Equal(t, pipeline.Inbound{Channel: Channel, ChatID: "room", ChatType: pipeline.ChatDirect, MessageID: "a1", SenderID: "boss",
		ReplyTo: id, Action: "approve:p1", ReceivedAt: time.Unix(1700000000, 0).UTC()}, sink.accepted[0])

	code, body = post(t, ts.URL+"/api/chats/room/actions", "", `{"sender_id":"boss","action":"approve:p1"}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "message_id are required")
	code, _ = post(t, ts.URL+"/bot/chats/room/messages/"+id, "Bearer "+token, `{"text":"x"}`)
	assert.Equal(t, http.StatusMethodNotAllowed, code, "edits are PATCH")
}

// A page that was reloaded connects with ?replay=all and no Last-Event-ID:
// it gets the chat so far, both sides, without the momentary typing.
func TestNewStreamAskingForReplayGetsTheWholeBacklog(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	for range 2 { // a retried message is shown once
		code, body := post(t, ts.URL+"/api/chats/room/messages", "", `{"message_id":"m1","sender_id":"alice","sender_name":"Alice","text":"hi"}`)
		require.Equal(t, http.StatusAccepted, code, body)
	}
	require.NoError(t, c.SetReaction(context.Background(), pipeline.ReactionChange{Session: session, MessageID: "m1", State: pipeline.ReactionReceived}))
	require.NoError(t, c.Typing(context.Background(), session, ""))
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: "k", Text: "hello Alice", ReplyTo: "m1"})
	require.NoError(t, err)

	replayed := openStream(t, ts.URL+"/api/chats/room/events?replay=all", "")
	assert.Equal(t, []string{
		`user {"message_id":"m1","sender_id":"alice","sender_name":"Alice","text":"hi"}`,
		`reaction {"message_id":"m1","emoji":"👀","state":"received"}`,
		`message {"message_id":"` + id + `","text":"hello Alice","reply_to":"m1","html":"\u003cp\u003ehello Alice\u003c/p\u003e\n"}`,
	}, readEvents(t, replayed, 3))

	// Without replay=all a new stream starts from now; with a
	// Last-Event-ID it gets only what came after that.
	fresh := openStream(t, ts.URL+"/api/chats/room/events", "")
	reconnected := openStream(t, ts.URL+"/api/chats/room/events?replay=all", lastEventID(t, ts.URL+"/api/chats/room/events?replay=all", 2))
	_, err = c.Send(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: "k2", Text: "anything else?"})
	require.NoError(t, err)
	assert.Contains(t, readEvents(t, fresh, 1)[0], "anything else?")
	got := readEvents(t, reconnected, 2)
	assert.Contains(t, got[0], "hello Alice")
	assert.Contains(t, got[1], "anything else?")
}

// lastEventID is the ID of the n-th event a new stream of url replays.
func lastEventID(t *testing.T, url string, n int) string {
	r := openStream(t, url, "")
	for seen := 0; ; {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			if seen++; seen == n {
				return id
			}
		}
	}
}

// syncBuffer is a log sink that handlers may write to from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A message or a button press Temporal did not accept is answered 503
// with a fixed reason saying what to do; what went wrong (the workflow
// ID, Temporal's address and error text) is for the gateway's log only.
func TestA503SaysWhatToDoAndKeepsTheCauseInTheLog(t *testing.T) {
	var logs syncBuffer
	sink := &recordingSink{err: errors.New(`start workflow session:webchat:room1: connection refused dialing 10.1.2.3:7233 (namespace "prod")`)}
	srv, err := NewServer(ServerConfig{Sink: sink, BotToken: token, Auth: AuthNone, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	for _, c := range []struct{ path, body, retry string }{
		{"/api/chats/room1/messages", `{"message_id":"m9","sender_id":"alice","text":"my secret plan"}`, "retry with the same message_id"},
		{"/api/chats/room1/actions", `{"action_id":"a9","sender_id":"alice","message_id":"b1","action":"approve"}`, "retry with the same action_id"},
	} {
		code, body := post(t, ts.URL+c.path, "", c.body)
		assert.Equal(t, http.StatusServiceUnavailable, code, body)
		assert.Contains(t, body, c.retry)
		for _, secret := range []string{"session:", "7233", "10.1.2.3", "refused", "prod"} {
			assert.NotContains(t, body, secret, "the answer shows nothing of the cause")
		}
	}
	log := logs.String()
	assert.Contains(t, log, "level=WARN")
	assert.Contains(t, log, "session=session:webchat:room1")
	assert.Contains(t, log, "message_id=m9")
	assert.Contains(t, log, "action_id=a9")
	assert.Contains(t, log, "10.1.2.3:7233", "the log has the cause")
	assert.NotContains(t, log, "my secret plan", "and never the message's text")
}
