package telegram

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzWebhookUpdate feeds the webhook arbitrary bodies: it must answer 200
// or 400 and never crash, and whatever it accepts must be a valid message.
func FuzzWebhookUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"update_id":1,"message":{"message_id":5,"from":{"id":7,"first_name":"A"},"chat":{"id":7,"type":"private"},"date":1,"text":"hi"}}`,
		`{"update_id":2,"message":{"message_id":6,"message_thread_id":3,"is_topic_message":true,"from":{"id":7,"first_name":"A"},"chat":{"id":-100,"type":"supergroup","is_forum":true},"date":1,"caption":"@bot x","caption_entities":[{"type":"mention","offset":0,"length":4}],"photo":[{"file_id":"p","file_unique_id":"u","width":1,"height":1}]}}`,
		`{"update_id":3,"callback_query":{"id":"q","from":{"id":7,"first_name":"A"},"chat_instance":"c","data":"approve:p1","message":{"message_id":9,"date":1,"chat":{"id":7,"type":"private"}}}}`,
		`{"update_id":4,"message_reaction":{"chat":{"id":7,"type":"private"},"message_id":9,"user":{"id":7,"first_name":"A"},"date":1,"old_reaction":[],"new_reaction":[{"type":"emoji","emoji":"👍"}]}}`,
		`{"update_id":5,"message":{"message_id":1,"chat":{"id":1,"type":"group"},"date":1,"text":"/status@bot now","entities":[{"type":"bot_command","offset":0,"length":-3}]}}`,
		`{"update_id":`, `null`, `[]`,
	} {
		f.Add(seed)
	}
	b, err := newBot(testToken, "http://127.0.0.1:1", &http.Client{Timeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	to := &sink{}
	r := &Receiver{cfg: ReceiverConfig{Sink: to, Feedback: to, Now: time.Now}, bot: b, me: Identity{ID: 1000, Username: "bot"}, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	hook := r.WebhookHandler("secret")
	f.Fuzz(func(t *testing.T, body string) {
		to.mu.Lock()
		to.accepted, to.feedback = nil, nil
		to.mu.Unlock()
		req := httptest.NewRequest(http.MethodPost, "/telegram/webhook", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "secret")
		rec := httptest.NewRecorder()
		hook.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		to.mu.Lock()
		defer to.mu.Unlock()
		for _, in := range to.accepted {
			if err := in.Validate(); err != nil {
				t.Fatalf("accepted an invalid message %+v: %v", in, err)
			}
		}
		for _, fb := range to.feedback {
			if err := fb.Validate(); err != nil {
				t.Fatalf("accepted invalid feedback %+v: %v", fb, err)
			}
		}
	})
}
