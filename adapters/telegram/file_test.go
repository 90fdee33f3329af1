package telegram

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAFileIsUploadedInTheTopicUnderTheCommandOnce(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	ctx := context.Background()
	chat := telegramtest.Forum(-100)
	topic := fake.CreateTopic(chat, user42)
	asked := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Topic: topic, Text: "/export"})
	d := pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "export/e1/file", ThreadID: "topic-" + strconv.Itoa(topic),
		ReplyTo: strconv.Itoa(asked), Text: "The conversation so far: 4 message(s)."}
	f := adapters.File{Name: "transcript--100.md", ContentType: "text/markdown", Data: []byte("# Conversation\n\n> hi\n")}
	id, err := c.SendFile(ctx, d, f)
	require.NoError(t, err)
	again, err := c.SendFile(ctx, d, f)
	require.NoError(t, err)
	assert.Equal(t, id, again)

	var files []telegramtest.Message
	for _, m := range fake.Sent(chat.ID) {
		if m.File != nil {
			files = append(files, m)
		}
	}
	require.Len(t, files, 1, "a retry on this worker uploads nothing again")
	assert.Equal(t, "transcript--100.md", files[0].File.Name)
	assert.Equal(t, f.Data, files[0].File.Data)
	assert.Equal(t, "The conversation so far: 4 message(s).", files[0].Text)
	assert.Equal(t, topic, files[0].ThreadID)
	assert.Equal(t, asked, files[0].ReplyTo)
}

func TestAFailedUploadIsClassifiedAsASendIs(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Group(-100)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	fake.FailNext("sendDocument", 1, telegramtest.TooManyRequests(4))
	d := pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "k", Text: "x"}
	_, err := c.SendFile(context.Background(), d, adapters.File{Name: "a.md", Data: []byte("x")})
	kind, wait := adapters.Classify(err)
	assert.Equal(t, adapters.RateLimited, kind)
	assert.Equal(t, 4*time.Second, wait)

	_, err = c.SendFile(context.Background(), pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "k2"}, adapters.File{Name: "big.md", Data: make([]byte, maxUploadBytes+1)})
	kind, _ = adapters.Classify(err)
	assert.Equal(t, adapters.Permanent, kind)
	assert.Empty(t, fake.Calls("sendDocument")[1:], "an oversized file is refused before any call")
}

// A voice reply is a voice note (sendVoice), without a caption, in the
// topic; a retry on this worker sends it once, and an empty one is
// refused before any call.
func TestAVoiceReplyIsAVoiceNoteSentOnce(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	ctx := context.Background()
	chat := telegramtest.Forum(-101)
	topic := fake.CreateTopic(chat, user42)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Topic: topic, Text: "hi"})
	d := pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "t1/0/voice", ThreadID: "topic-" + strconv.Itoa(topic)}
	v := adapters.File{Name: adapters.VoiceFileName, ContentType: "audio/ogg", Data: []byte("OggS voice")}
	id, err := c.SendVoice(ctx, d, v)
	require.NoError(t, err)
	again, err := c.SendVoice(ctx, d, v)
	require.NoError(t, err)
	assert.Equal(t, id, again)

	var notes []telegramtest.Message
	for _, m := range fake.Sent(chat.ID) {
		if m.VoiceNote != nil {
			notes = append(notes, m)
		}
	}
	require.Len(t, notes, 1, "a retry on this worker sends nothing again")
	assert.Equal(t, v.Data, notes[0].VoiceNote.Data)
	assert.Equal(t, "", notes[0].Text, "no caption")
	assert.Equal(t, topic, notes[0].ThreadID)
	assert.Equal(t, strconv.Itoa(notes[0].ID), id)

	_, err = c.SendVoice(ctx, pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "t2/0/voice"}, adapters.File{Name: adapters.VoiceFileName})
	kind, _ := adapters.Classify(err)
	assert.Equal(t, adapters.Permanent, kind)
	assert.Len(t, fake.Calls("sendVoice"), 1)
}
