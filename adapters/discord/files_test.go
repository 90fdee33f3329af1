package discord

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAFileIsPostedInTheThreadAsAReplyOnce(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	asked := fake.Post(discordtest.Post{Channel: outThread, Author: outAda, Content: "/export"})
	c := outClient(t, fake, ClientConfig{})
	d := pipeline.Delivery{Session: outSession(outGeneral), ThreadID: outThread, ReplyTo: asked.ID, IdempotencyKey: "session:discord:b:c/export/e1/file",
		Text: "The conversation so far: 4 message(s).", Total: 1}
	f := adapters.File{Name: "transcript.md", ContentType: "text/markdown", Data: []byte("# Conversation\n\n> hi\n")}
	fake.FailNext(discordtest.RouteSend, 1, discordtest.AnswerLost())
	_, err := c.SendFile(context.Background(), d, f)
	kind, _ := outKind(err)
	require.Equal(t, adapters.Transient, kind, "a lost answer is transient, as for Send: %v", err)
	id, err := c.SendFile(context.Background(), d, f)
	require.NoError(t, err)

	sent := fake.Sent(outThread)
	require.Len(t, sent, 1, "the nonce makes the retry the same message")
	m, ok := fake.Message(outThread, id)
	require.True(t, ok)
	assert.Equal(t, "The conversation so far: 4 message(s).", m.Content)
	assert.Equal(t, asked.ID, m.Reply)
	require.Len(t, m.Attachments, 1)
	assert.Equal(t, "transcript.md", m.Attachments[0].Filename)
	assert.Equal(t, f.Data, m.Attachments[0].Data)
	assert.Empty(t, fake.Sent(outGeneral), "nothing in the parent channel")
}

func TestAFileOverTheBoundIsRefusedBeforeAnyCall(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	_, err := c.SendFile(context.Background(), pipeline.Delivery{Session: outSession(outGeneral), Text: "x"}, adapters.File{Name: "a.md", Data: make([]byte, maxFileBytes+1)})
	kind, _ := outKind(err)
	assert.Equal(t, adapters.Permanent, kind)
	assert.Empty(t, fake.Calls(discordtest.RouteSend))
	assert.Equal(t, maxFileBytes, c.MaxFileBytes())
}

// A voice reply is an audio file without a caption.
func TestAVoiceReplyIsAnAudioFileWithoutACaption(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	d := pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "session:discord:b:c/t1/0/voice", Text: "the reply's text", Total: 1}
	v := adapters.File{Name: adapters.VoiceFileName, ContentType: "audio/ogg", Data: []byte("OggS voice")}
	id, err := c.SendVoice(context.Background(), d, v)
	require.NoError(t, err)
	m, ok := fake.Message(outGeneral, id)
	require.True(t, ok)
	assert.Equal(t, "", m.Content)
	require.Len(t, m.Attachments, 1)
	assert.Equal(t, "reply.ogg", m.Attachments[0].Filename)
	assert.Equal(t, v.Data, m.Attachments[0].Data)
}
