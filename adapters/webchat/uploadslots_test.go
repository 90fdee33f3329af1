package webchat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
)

// A signed-in sender has at most MaxUploadsPerSender uploads in flight:
// each holds its file in memory while it is read, so one token must not
// be able to make the gateway hold a thousand. A finished upload frees
// its slot, and another sender has slots of their own.
func TestASenderHasAtMostMaxUploadsInFlight(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	signer := testSigner(t)
	srv, err := NewServer(ServerConfig{Sink: &recordingSink{}, BotToken: token, AuthKey: testAuthKey, Now: func() time.Time { return t0 },
		ChatLog: db, Uploads: db, MaxUploadBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	tokenOf := func(sub string) string {
		tok, err := signer.Sign(Claims{Sub: sub, Kind: KindUser, IssuedAt: t0.Unix()})
		require.NoError(t, err)
		return tok
	}
	alice, bob := tokenOf("alice"), tokenOf("bob")

	// form is a whole upload's body; its head is the body up to the
	// file's last byte, which a slow sender holds back.
	form := func(messageID string) (string, []byte) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		require.NoError(t, mw.WriteField("message_id", messageID))
		fw, err := mw.CreateFormFile("file", "cat.png")
		require.NoError(t, err)
		_, err = fw.Write(uploadPNG)
		require.NoError(t, err)
		require.NoError(t, mw.Close())
		return mw.FormDataContentType(), body.Bytes()
	}
	post := func(chat, tok string, contentType string, body io.Reader) (int, string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/api/chats/"+chat+"/uploads", body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}

	type held struct {
		rest []byte
		pipe *io.PipeWriter
		done chan int
	}
	var slow []held
	for i := range MaxUploadsPerSender {
		contentType, body := form(fmt.Sprintf("slow-%d", i))
		r, w := io.Pipe()
		h := held{rest: body[len(body)-10:], pipe: w, done: make(chan int, 1)}
		go func() {
			code, _ := post("alice", alice, contentType, r)
			h.done <- code
		}()
		_, err := w.Write(body[:len(body)-10])
		require.NoError(t, err)
		slow = append(slow, h)
	}
	// Both are being read once their handlers hold their slots.
	require.Eventually(t, func() bool {
		srv.uploads.mu.Lock()
		defer srv.uploads.mu.Unlock()
		return srv.uploads.open["alice"] == MaxUploadsPerSender
	}, 10*time.Second, 5*time.Millisecond)

	contentType, body := form("third")
	code, reply := post("alice", alice, contentType, bytes.NewReader(body))
	require.Equal(t, http.StatusTooManyRequests, code, reply)
	assert.Contains(t, reply, fmt.Sprintf("%d uploads in flight", MaxUploadsPerSender), "the reason names the bound")

	contentType, body = form("bobs")
	code, reply = post("bob", bob, contentType, bytes.NewReader(body))
	require.Equal(t, http.StatusAccepted, code, "another sender has slots of his own: %s", reply)

	// The first slow upload finishes, and frees its slot when it is answered.
	_, err = slow[0].pipe.Write(slow[0].rest)
	require.NoError(t, err)
	require.NoError(t, slow[0].pipe.Close())
	select {
	case code := <-slow[0].done:
		require.Equal(t, http.StatusAccepted, code)
	case <-time.After(10 * time.Second):
		t.Fatal("the finished upload was never answered")
	}
	contentType, body = form("third")
	code, reply = post("alice", alice, contentType, bytes.NewReader(body))
	require.Equal(t, http.StatusAccepted, code, "a finished upload frees its slot: %s", reply)

	require.NoError(t, slow[1].pipe.CloseWithError(io.ErrUnexpectedEOF))
	<-slow[1].done
	require.Eventually(t, func() bool {
		srv.uploads.mu.Lock()
		defer srv.uploads.mu.Unlock()
		return len(srv.uploads.open) == 0
	}, 10*time.Second, 5*time.Millisecond, "every slot is released, and the map forgets its senders")
}
