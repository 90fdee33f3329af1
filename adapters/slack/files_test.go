package slack_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAFileIsSharedInTheThreadWithItsCommentOnce(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "/export"})
	d := pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "export/e1/file", ThreadID: parent.TS, Text: "The **conversation** so far", Total: 1}
	f := adapters.File{Name: "transcript-C1.md", ContentType: "text/markdown", Data: []byte("# Conversation\n\n> hi\n")}
	id, err := c.SendFile(context.Background(), d, f)
	require.NoError(t, err)
	again, err := c.SendFile(context.Background(), d, f)
	require.NoError(t, err)
	assert.Equal(t, id, again)

	var shared []slacktest.Message
	for _, m := range fake.Sent("C1") {
		if len(m.Files) > 0 {
			shared = append(shared, m)
		}
	}
	require.Len(t, shared, 1, "a retry on this worker shares nothing again")
	assert.Equal(t, parent.TS, shared[0].ThreadTS)
	assert.Equal(t, "The *conversation* so far", shared[0].Text, "the comment is mrkdwn")
	assert.Equal(t, id, shared[0].Files[0].ID)
	assert.Equal(t, "transcript-C1.md", shared[0].Files[0].Name)
	assert.Equal(t, f.Data, shared[0].Files[0].Data)
	assert.Len(t, fake.Calls("files.getUploadURLExternal"), 1)
}

func TestAFailedShareIsClassifiedAsASendIs(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	fake.FailNext("files.completeUploadExternal", 1, slacktest.ServerError())
	d := pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "k", Text: "x"}
	_, err := c.SendFile(context.Background(), d, adapters.File{Name: "a.md", Data: []byte("x")})
	kind, _ := adapters.Classify(err)
	assert.Equal(t, adapters.Transient, kind, "%v", err)

	_, err = c.SendFile(context.Background(), pipeline.Delivery{Session: outboundSession("nope"), IdempotencyKey: "k2", Text: "x"}, adapters.File{Name: "a.md", Data: []byte("x")})
	kind, _ = adapters.Classify(err)
	assert.Equal(t, adapters.Permanent, kind, "channel_not_found needs a person: %v", err)

	_, err = c.SendFile(context.Background(), pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "k3"}, adapters.File{Name: "big.md", Data: make([]byte, c.MaxFileBytes()+1)})
	kind, _ = adapters.Classify(err)
	assert.Equal(t, adapters.Permanent, kind)
}

// A voice reply is an audio file shared in the thread without a comment.
func TestAVoiceReplyIsAnAudioFileWithoutAComment(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	d := pipeline.Delivery{Session: outboundSession("C1"), IdempotencyKey: "t1/0/voice", ThreadID: parent.TS, Text: "the reply's text", Total: 1}
	v := adapters.File{Name: adapters.VoiceFileName, ContentType: "audio/ogg", Data: []byte("OggS voice")}
	id, err := c.SendVoice(context.Background(), d, v)
	require.NoError(t, err)
	var shared []slacktest.Message
	for _, m := range fake.Sent("C1") {
		if len(m.Files) > 0 {
			shared = append(shared, m)
		}
	}
	require.Len(t, shared, 1)
	assert.Equal(t, parent.TS, shared[0].ThreadTS)
	assert.Equal(t, "", shared[0].Text)
	assert.Equal(t, id, shared[0].Files[0].ID)
	assert.Equal(t, "reply.ogg", shared[0].Files[0].Name)
	assert.Equal(t, v.Data, shared[0].Files[0].Data)
}
