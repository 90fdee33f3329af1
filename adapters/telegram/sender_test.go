package telegram

import (
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/pipeline"
)

// Telegram's stand-in users for messages sent on behalf of a chat: the
// same IDs in every chat on Telegram.
var (
	groupAnonymousBot = models.User{ID: 1087968824, IsBot: true, FirstName: "Group", Username: "GroupAnonymousBot"}
	channelBot        = models.User{ID: 136817688, IsBot: true, FirstName: "Channel", Username: "Channel_Bot"}
	telegramService   = models.User{ID: 777000, FirstName: "Telegram"}
)

// A message sent on behalf of a chat names a stand-in user in from,
// shared by every anonymous admin (or channel) on Telegram. Were that
// the sender, an owner who claimed the agent as an anonymous admin would
// make every anonymous admin of every group an owner, including one of a
// group a stranger makes and adds the bot to; the sender is the chat in
// sender_chat instead.
func TestMessagesOnBehalfOfAChatAreThatChats(t *testing.T) {
	ours := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, Title: "Ops"}
	theirs := models.Chat{ID: -1002, Type: models.ChatTypeSupergroup, Title: "A stranger's group"}
	channelA := models.Chat{ID: -1003, Type: models.ChatTypeChannel, Title: "Channel A"}
	channelB := models.Chat{ID: -1004, Type: models.ChatTypeChannel, Title: "Channel B"}
	onBehalf := func(id int, chat models.Chat, from models.User, as models.Chat) *models.Update {
		return &models.Update{ID: int64(id), Message: &models.Message{ID: id, Chat: chat, From: &from, SenderChat: &as, Text: "/activation always"}}
	}

	ownAdmin := inbound(t, onBehalf(1, ours, groupAnonymousBot, ours))
	strangersAdmin := inbound(t, onBehalf(2, theirs, groupAnonymousBot, theirs))
	assert.Equal(t, "-1001", ownAdmin.SenderID, "an anonymous admin speaks as the group")
	assert.Equal(t, "Ops", ownAdmin.SenderName)
	assert.NotEqual(t, ownAdmin.SenderID, strangersAdmin.SenderID, "anonymous admins of two groups are two senders")

	asA := inbound(t, onBehalf(3, ours, channelBot, channelA))
	asB := inbound(t, onBehalf(4, ours, channelBot, channelB))
	assert.Equal(t, "-1003", asA.SenderID, "a member posting as a channel speaks as the channel")
	assert.NotEqual(t, asA.SenderID, asB.SenderID, "members posting as two channels are two senders")

	forwarded := inbound(t, onBehalf(5, ours, telegramService, channelA))
	assert.Equal(t, "-1003", forwarded.SenderID, "a linked channel's automatic forward is the channel's")

	long := channelA
	long.Title = strings.Repeat("ä", 300)
	clipped := inbound(t, onBehalf(6, ours, channelBot, long))
	assert.LessOrEqual(t, len(clipped.SenderName), pipeline.MaxNameBytes, "a chat's title is clipped as a user's name is")
}
