package webchat

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// sharedChat is a token-mode web chat keeping uploads in a store, where
// alice and bob both reach chat "room" (tokens issued with --chat).
type sharedChat struct {
	t          *testing.T
	url        string
	sink       *recordingSink
	db         *store.Store
	alice, bob string
}

func newSharedChat(t *testing.T, uploads func(*store.Store) adapters.UploadStore) *sharedChat {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	c := &sharedChat{t: t, sink: &recordingSink{}, db: db}
	var up adapters.UploadStore = db
	if uploads != nil {
		up = uploads(db)
	}
	srv, err := NewServer(ServerConfig{Sink: c.sink, BotToken: token, AuthKey: testAuthKey, Now: func() time.Time { return t0 },
		ChatLog: db, Uploads: up, MaxUploadBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	c.url = ts.URL
	signer := testSigner(t)
	for sub, tok := range map[string]*string{"alice": &c.alice, "bob": &c.bob} {
		*tok, err = signer.Sign(Claims{Sub: sub, Kind: KindUser, Chats: []string{"room"}, IssuedAt: t0.Unix()})
		require.NoError(t, err)
	}
	return c
}

// upload posts one file to chat room as the sender of tok.
func (c *sharedChat) upload(tok, messageID, name string, data []byte) (int, string) {
	c.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(c.t, mw.WriteField("message_id", messageID))
	fw, err := mw.CreateFormFile("file", name)
	require.NoError(c.t, err)
	_, err = fw.Write(data)
	require.NoError(c.t, err)
	require.NoError(c.t, mw.Close())
	return c.do(tok, "/api/chats/room/uploads", mw.FormDataContentType(), &body)
}

// message posts a JSON message to chat room as the sender of tok.
func (c *sharedChat) message(tok, messageID, text string) (int, string) {
	c.t.Helper()
	return c.do(tok, "/api/chats/room/messages", "application/json",
		bytes.NewReader([]byte(`{"message_id":"`+messageID+`","text":"`+text+`"}`)))
}

func (c *sharedChat) do(tok, path, contentType string, body io.Reader) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url+path, body)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// files is what the store keeps of message id of chat room.
func (c *sharedChat) files(id string) []store.StoredMedia {
	c.t.Helper()
	session := pipeline.Inbound{Channel: Channel, ChatID: "room"}.Session().WorkflowID()
	kept, err := c.db.MessageMedia(context.Background(), session, []string{id})
	require.NoError(c.t, err)
	return kept[id]
}

func (c *sharedChat) accepted() int {
	c.sink.mu.Lock()
	defer c.sink.mu.Unlock()
	return len(c.sink.accepted)
}

// A sender sees the other senders' message IDs in a shared chat's event
// stream. An upload under one of them changes neither the file nor the
// bytes the store keeps for that message, nor gives a file to a message
// that had none: it is refused with a reason, and the session never hears
// of it. The sender's own retry is answered as a duplicate.
func TestAnUploadNeverChangesTheFileOfAnotherSendersMessage(t *testing.T) {
	c := newSharedChat(t, nil)
	code, body := c.upload(c.alice, "m1", "cat.png", uploadPNG)
	require.Equal(t, http.StatusAccepted, code, body)
	want := []store.StoredMedia{{MessageID: "m1", Seq: 0,
		Media:   pipeline.Media{Kind: "photo", Ref: "upload:room/m1/0", MimeType: "image/png", Name: "cat.png"},
		Content: base64.StdEncoding.EncodeToString(uploadPNG)}}
	require.Equal(t, want, c.files("m1"))

	code, body = c.upload(c.bob, "m1", "cat.png", []byte("not a cat at all"))
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Contains(t, body, `message_id \"m1\"`, "the reason names the message_id")
	assert.Contains(t, body, "new message_id", "and says what to do")
	assert.Equal(t, want, c.files("m1"), "alice's file, record and bytes, is as she sent it")
	data, ok, err := c.db.UploadedFile(context.Background(), "upload:room/m1/0")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uploadPNG, data, "the worker reads alice's bytes")
	assert.Equal(t, 1, c.accepted(), "the session never hears of bob's upload")

	// A message sent without a file gets none from another sender.
	code, body = c.message(c.alice, "m2", "hello")
	require.Equal(t, http.StatusAccepted, code, body)
	code, body = c.upload(c.bob, "m2", "cat.png", uploadPNG)
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Empty(t, c.files("m2"))
	assert.Equal(t, 2, c.accepted())

	// Alice's own retry is a duplicate: answered 202, the file unchanged,
	// even if she sends other bytes under the accepted message's ID.
	code, body = c.upload(c.alice, "m1", "cat.png", uploadPNG)
	assert.Equal(t, http.StatusAccepted, code, body)
	code, body = c.upload(c.alice, "m1", "cat.png", []byte("other bytes"))
	assert.Equal(t, http.StatusAccepted, code, body)
	assert.Equal(t, want, c.files("m1"))

	// Bob's own messages are his to send.
	code, body = c.upload(c.bob, "b1", "note.txt", []byte("bob's note"))
	assert.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, c.files("b1"), 1)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("bob's note")), c.files("b1")[0].Content)
}

// flakyUploads fails its first KeepUpload, as a store that was briefly
// unreachable, writing nothing.
type flakyUploads struct {
	adapters.UploadStore
	failed bool
}

func (f *flakyUploads) KeepUpload(ctx context.Context, sessionID, messageID string, m pipeline.Media, content string) error {
	if !f.failed {
		f.failed = true
		return assert.AnError
	}
	return f.UploadStore.KeepUpload(ctx, sessionID, messageID, m, content)
}

// An upload answered 503 is retried with the same message_id and then
// goes through: after a keep that failed (nothing was written) and after
// a signal that failed (the file is kept, the chat's log does not have
// the message yet). Meanwhile another sender's upload under that ID is
// refused by the store itself, and changes nothing.
func TestAnUploadRetriedAfterA503GoesThroughAndNoOneElsesDoes(t *testing.T) {
	c := newSharedChat(t, func(db *store.Store) adapters.UploadStore { return &flakyUploads{UploadStore: db} })
	code, body := c.upload(c.alice, "m1", "cat.png", uploadPNG)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "retry with the same message_id")
	assert.Empty(t, c.files("m1"))
	code, body = c.upload(c.alice, "m1", "cat.png", uploadPNG)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Len(t, c.files("m1"), 1)

	c.sink.mu.Lock()
	c.sink.err = assert.AnError
	c.sink.mu.Unlock()
	code, body = c.upload(c.alice, "m2", "cat.png", uploadPNG)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "retry with the same message_id")
	c.sink.mu.Lock()
	c.sink.err = nil
	c.sink.mu.Unlock()
	want := []store.StoredMedia{{MessageID: "m2", Seq: 0,
		Media:   pipeline.Media{Kind: "photo", Ref: "upload:room/m2/0", MimeType: "image/png", Name: "cat.png"},
		Content: base64.StdEncoding.EncodeToString(uploadPNG)}}
	require.Equal(t, want, c.files("m2"), "kept before the signal that failed")

	code, body = c.upload(c.bob, "m2", "cat.png", []byte("not a cat at all"))
	assert.Equal(t, http.StatusConflict, code, body)
	code, body = c.upload(c.alice, "m2", "cat.png", []byte("other bytes"))
	assert.Equal(t, http.StatusConflict, code, "a retry is the same file: %s", body)
	assert.Equal(t, want, c.files("m2"))
	assert.Equal(t, 1, c.accepted())

	code, body = c.upload(c.alice, "m2", "cat.png", uploadPNG)
	require.Equal(t, http.StatusAccepted, code, body)
	assert.Equal(t, want, c.files("m2"))
	assert.Equal(t, 2, c.accepted())
}
