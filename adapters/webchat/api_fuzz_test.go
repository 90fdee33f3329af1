package webchat

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// apiRoutes are the web chat's routes that read a body or a header, as
// method and path, with %s for the fuzzed chat ID.
var apiRoutes = []struct{ method, path string }{
	{http.MethodPost, "/api/chats/%s/messages"},
	{http.MethodPost, "/api/chats/%s/actions"},
	{http.MethodGet, "/api/chats/%s/events"},
	{http.MethodPost, "/bot/chats/%s/messages"},
	{http.MethodPut, "/bot/chats/%s/messages/b-1/reaction"},
	{http.MethodPatch, "/bot/chats/%s/messages/b-1"},
	{http.MethodPost, "/bot/chats/%s/typing"},
	{http.MethodGet, "/api/me"},
	{http.MethodGet, "/login?t=%s"},
	{http.MethodPost, "/logout"},
}

// FuzzWebchatAPI sends every route of the web chat API an arbitrary chat,
// body, token and Last-Event-ID, in both sign-in modes. The server must
// answer with a 2xx, 3xx or 4xx, never crash or fail on its own, and hand
// the sink only valid messages, exactly one for each accepted user call;
// in token mode, only messages of the signed-in sender.
func FuzzWebchatAPI(f *testing.F) {
	f.Add(uint8(0), "room", `{"sender_id":"alice","text":"hi"}`, true, "")
	f.Add(uint8(1), "room", `{"sender_id":"boss","message_id":"b-1","action":"approve:p1"}`, false, "")
	f.Add(uint8(2), "room", "", false, "abc:17")
	f.Add(uint8(3), "room", `{"text":"hello","idempotency_key":"k1","buttons":[{"text":"A","action":"a"}]}`, true, "")
	f.Add(uint8(4), "room", `{"emoji":"👀","state":"received"}`, true, "")
	f.Add(uint8(5), "room", `{"text":"edited"}`, true, "")
	f.Add(uint8(6), "room", `{"thread_id":"t"}`, true, "")
	f.Add(uint8(0), "a/b", `{"sender_id":"a","text":"x","chat_type":"channel"}`, false, "")
	f.Add(uint8(1), "", `{"sender_id":"a","message_id":"\u0000","action":"x"}`, false, "")
	f.Add(uint8(0), "..", `{"sender_id":"a","text":"x"}`, false, "")
	f.Add(uint8(0), "room", `{"sender_id":"a","message_id":".","text":"x"}`, false, "")
	f.Add(uint8(0), "room", `{"text":"signed in","sender_id":"fuzzer"}`, true, "")
	f.Add(uint8(1), "room", `{"message_id":"b-1","action":"approve:p1"}`, true, "")
	f.Add(uint8(8), "v1.e30.", "", false, "")

	sink := &recordingSink{}
	now := func() time.Time { return time.Unix(1700000000, 0) }
	var servers [2]*Server
	for i, mode := range []AuthMode{AuthNone, AuthToken} {
		srv, err := NewServer(ServerConfig{Sink: sink, BotToken: token, Auth: mode, AuthKey: testAuthKey, Now: now,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			f.Fatal(err)
		}
		servers[i] = srv
	}
	userToken, err := testSigner(f).Sign(Claims{Sub: "fuzzer", Kind: KindUser})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, route uint8, chat, body string, withToken bool, lastEventID string) {
		for _, srv := range servers {
			fuzzRoute(t, srv, sink, userToken, apiRoutes[int(route)%len(apiRoutes)], chat, body, withToken, lastEventID)
		}
	})
}

func fuzzRoute(t *testing.T, srv *Server, sink *recordingSink, userToken string, r struct{ method, path string },
	chat, body string, withToken bool, lastEventID string,
) {
	bot, err := NewClient("http://webchat.test", token, &http.Client{
		Transport:     serveInProcess{srv},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	})
	if err != nil {
		t.Fatal(err)
	}
	target := strings.Replace(r.path, "%s", url.PathEscape(chat), 1)
	req := httptest.NewRequest(r.method, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	switch {
	case withToken && strings.HasPrefix(r.path, "/bot/"):
		req.Header.Set("Authorization", "Bearer "+token)
	case withToken:
		req.Header.Set("Authorization", "Bearer "+userToken)
	}
	if lastEventID != "" && !strings.ContainsAny(lastEventID, "\r\n") {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// An event stream ends once it has written what was missed.
	ctx, cancel := context.WithCancel(req.Context())
	cancel()
	req = req.WithContext(ctx)

	sink.mu.Lock()
	sink.accepted = nil
	sink.mu.Unlock()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)

	// 3xx is the mux cleaning a path with an empty chat ("//").
	if rec.Code < 200 || rec.Code >= 500 {
		t.Fatalf("%s %s with %q: status %d %s", r.method, target, body, rec.Code, rec.Body)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	userCall := strings.HasPrefix(r.path, "/api/") && r.method == http.MethodPost
	switch {
	case userCall && rec.Code == http.StatusAccepted && len(sink.accepted) != 1:
		t.Fatalf("%s answered 202 but handed the sink %d messages", target, len(sink.accepted))
	case rec.Code != http.StatusAccepted && len(sink.accepted) != 0:
		t.Fatalf("%s answered %d but handed the sink %+v", target, rec.Code, sink.accepted)
	}
	for _, in := range sink.accepted {
		if err := in.Validate(); err != nil {
			t.Fatalf("%s accepted an invalid message %+v: %v", target, in, err)
		}
		if srv.cfg.Auth == AuthToken && (in.SenderID != "fuzzer" || in.SenderIsOwner) {
			t.Fatalf("%s in token mode accepted %+v, not the signed-in sender's", target, in)
		}
		if srv.cfg.Auth == AuthNone && in.SenderIsOwner {
			t.Fatalf("%s in none mode accepted an owner %+v", target, in)
		}
		// The bot can answer whatever was accepted: its reply and its
		// reaction reach the chat through the bot API's routes.
		d := pipeline.Delivery{Session: in.Session(), IdempotencyKey: "fuzz/" + in.MessageID, Text: "answer"}
		if _, err := bot.Send(context.Background(), d); err != nil {
			t.Fatalf("%s accepted chat %q, but the bot cannot answer it: %v", target, in.ChatID, err)
		}
		change := pipeline.ReactionChange{Session: in.Session(), MessageID: in.MessageID, State: pipeline.ReactionDone}
		if err := bot.SetReaction(context.Background(), change); err != nil {
			t.Fatalf("%s accepted message %q, but the bot cannot react to it: %v", target, in.MessageID, err)
		}
	}
}

// serveInProcess hands the bot client's requests to the server without a
// network, and never follows a redirect: a route the mux must clean first
// is one the bot cannot use.
type serveInProcess struct{ srv *Server }

func (s serveInProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	s.srv.ServeHTTP(rec, req)
	return rec.Result(), nil
}
