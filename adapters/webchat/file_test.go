package webchat

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAFileReachesTheStreamOnceWithItsCaption(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	stream := openStream(t, ts.URL+"/api/chats/room/events", "")
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "export/e1/file", Text: "The conversation so far", ReplyTo: "e1", ThreadID: "t1"}
	f := adapters.File{Name: "transcript-room.md", ContentType: "text/markdown", Data: []byte("# Conversation\n<script>x</script>")}
	first, err := c.SendFile(context.Background(), d, f)
	require.NoError(t, err)
	again, err := c.SendFile(context.Background(), d, f)
	require.NoError(t, err)
	assert.Equal(t, first, again, "a retried send returns the first send's ID")
	_, err = c.Send(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: "next", Text: "after"})
	require.NoError(t, err)

	events := readEvents(t, stream, 2)
	data := base64.StdEncoding.EncodeToString(f.Data)
	assert.Equal(t, `message {"message_id":"`+first+`","text":"The conversation so far","thread_id":"t1","reply_to":"e1","file":{"name":"transcript-room.md","content_type":"text/markdown","data":"`+data+`"},"html":"\u003cp\u003eThe conversation so far\u003c/p\u003e\n"}`, events[0])
	assert.True(t, strings.HasPrefix(events[1], `message {"message_id":`), "the repeated file was not shown twice: %v", events)
}

func TestAFileOutOfBoundsIsRefusedAsPermanent(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "k", Text: "x"}
	for name, f := range map[string]adapters.File{
		"too large": {Name: "a.md", Data: make([]byte, MaxFileBytes+1)},
		"a path":    {Name: "../etc/passwd", Data: []byte("x")},
		"empty":     {Name: "a.md"},
	} {
		_, err := c.SendFile(context.Background(), d, f)
		var ae *adapters.Error
		require.True(t, errors.As(err, &ae), name)
		assert.Equal(t, adapters.Permanent, ae.Kind, name)
	}
	// The gateway checks the same, whoever calls it.
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/bot/chats/room/files", strings.NewReader(`{"idempotency_key":"k","text":"x","file":{"name":"a/b","data":"eA=="}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, MaxFileBytes, c.MaxFileBytes())
}

// A voice reply is an audio part without a caption, which the page plays.
func TestAVoiceReplyIsAnAudioPartWithoutACaption(t *testing.T) {
	ts := newTestServer(t, &recordingSink{})
	stream := openStream(t, ts.URL+"/api/chats/room/events", "")
	c, err := NewClient(ts.URL, token, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: Channel, Chat: "room"}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "t1/0/voice", Text: "the reply's text", ThreadID: "t1"}
	v := adapters.File{Name: adapters.VoiceFileName, ContentType: "audio/ogg", Data: []byte("OggS voice")}
	id, err := c.SendVoice(context.Background(), d, v)
	require.NoError(t, err)
	events := readEvents(t, stream, 1)
	assert.Equal(t, `message {"message_id":"`+id+`","text":"","thread_id":"t1","file":{"name":"reply.ogg","content_type":"audio/ogg","data":"`+base64.StdEncoding.EncodeToString(v.Data)+`"}}`, events[0])
}
