package telegram

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAnEditOfADeletedMessageSaysItIsGone(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Group(-100)
	userMsg := fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "k", Text: "a preview"})
	require.NoError(t, err)
	n, _ := strconv.Atoi(id)
	fake.Delete(chat.ID, n)

	err = c.Edit(context.Background(), pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "the answer"})
	require.Error(t, err)
	assert.True(t, adapters.MessageGone(err), "%v", err)
	kind, _ := adapters.Classify(err)
	assert.Equal(t, adapters.Permanent, kind, "retrying the edit cannot help")

	// A message that is there but not the bot's is refused, not gone.
	err = c.Edit(context.Background(), pipeline.Edit{Session: keyOf(chat), PlatformMessageID: strconv.Itoa(userMsg), Text: "x"})
	require.Error(t, err)
	assert.False(t, adapters.MessageGone(err), "%v", err)
}
