package telegram

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

var (
	testBot = Identity{ID: 1000, Username: "replyflow_bot"}
	alice   = models.User{ID: 11, FirstName: "Alice"}
	bob     = models.User{ID: 12, FirstName: "Bob", LastName: "B"}
	forum   = models.Chat{ID: -100123, Type: models.ChatTypeSupergroup, IsForum: true}
	now     = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
)

func topicMessage(id, topic int, from models.User, text string) *models.Message {
	return &models.Message{
		ID: id, MessageThreadID: topic, IsTopicMessage: true, Chat: forum, From: &from, Text: text,
		// Telegram makes every topic message a reply to the topic's
		// first message.
		ReplyToMessage: &models.Message{ID: topic, Chat: forum},
	}
}

func inbound(t *testing.T, u *models.Update) pipeline.Inbound {
	t.Helper()
	ev := Normalize(testBot, u, now)
	require.NotNil(t, ev.Inbound, "skipped: %s", ev.Skip)
	require.NoError(t, ev.Inbound.Validate())
	return *ev.Inbound
}

func TestBufferKeyIncludesThreadAndUserWithNoCrossThreadMerge(t *testing.T) {
	aliceTopic7 := inbound(t, &models.Update{ID: 1, Message: topicMessage(50, 7, alice, "hi")})
	aliceTopic7Again := inbound(t, &models.Update{ID: 2, Message: topicMessage(51, 7, alice, "more")})
	aliceTopic9 := inbound(t, &models.Update{ID: 3, Message: topicMessage(52, 9, alice, "elsewhere")})
	bobTopic7 := inbound(t, &models.Update{ID: 4, Message: topicMessage(53, 7, bob, "me too")})

	assert.Equal(t, aliceTopic7.Session(), aliceTopic9.Session(), "the session is the chat")
	assert.Equal(t, "session:telegram:1000:-100123", aliceTopic7.Session().WorkflowID())
	assert.Equal(t, pipeline.BufferKeyOf(aliceTopic7), pipeline.BufferKeyOf(aliceTopic7Again))
	assert.NotEqual(t, pipeline.BufferKeyOf(aliceTopic7), pipeline.BufferKeyOf(aliceTopic9), "topics never merge")
	assert.NotEqual(t, pipeline.BufferKeyOf(aliceTopic7), pipeline.BufferKeyOf(bobTopic7), "users never merge")
	assert.Equal(t, "topic-7", aliceTopic7.ThreadID)
	assert.Empty(t, aliceTopic7.ReplyTo, "the topic's first message is not a reply target")
}

func TestThreadKeyIsTopicElseReplyChainElseRoot(t *testing.T) {
	group := models.Chat{ID: -42, Type: models.ChatTypeGroup}
	root := inbound(t, &models.Update{ID: 1, Message: &models.Message{ID: 5, Chat: group, From: &alice, Text: "hello"}})
	assert.Equal(t, pipeline.RootThread, root.Thread())

	reply := inbound(t, &models.Update{ID: 2, Message: &models.Message{ID: 6, Chat: group, From: &bob, Text: "yes",
		ReplyToMessage: &models.Message{ID: 5, Chat: group, From: &alice}}})
	assert.Equal(t, "reply-5", reply.ThreadID)
	assert.Equal(t, "5", reply.ReplyTo)
	assert.False(t, reply.ReplyToBot)

	toBot := inbound(t, &models.Update{ID: 3, Message: &models.Message{ID: 7, Chat: group, From: &bob, Text: "thanks",
		ReplyToMessage: &models.Message{ID: 6, Chat: group, From: &models.User{ID: testBot.ID, IsBot: true}}}})
	assert.True(t, toBot.ReplyToBot)

	topicReply := inbound(t, &models.Update{ID: 4, Message: &models.Message{ID: 60, MessageThreadID: 7, IsTopicMessage: true, Chat: forum, From: &bob, Text: "re",
		ReplyToMessage: &models.Message{ID: 55, Chat: forum, From: &alice}}})
	assert.Equal(t, "topic-7", topicReply.ThreadID, "the topic wins over the reply chain")
	assert.Equal(t, "55", topicReply.ReplyTo)
}

func TestMentionsAndCommandsFeedEngagement(t *testing.T) {
	group := models.Chat{ID: -42, Type: models.ChatTypeSupergroup}
	msg := func(text string, entities ...models.MessageEntity) *models.Update {
		return &models.Update{ID: 1, Message: &models.Message{ID: 9, Chat: group, From: &alice, Text: text, Entities: entities}}
	}
	// "héllo 👋 @replyflow_bot": the emoji is two UTF-16 units, which
	// entity offsets count.
	us := inbound(t, msg("héllo 👋 @replyflow_bot", models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 9, Length: 14}))
	assert.True(t, us.MentionsBot)
	assert.False(t, us.MentionsOthers)

	other := inbound(t, msg("@carol look", models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 0, Length: 6}))
	assert.False(t, other.MentionsBot)
	assert.True(t, other.MentionsOthers)

	cmd := inbound(t, msg("/status@replyflow_bot now", models.MessageEntity{Type: models.MessageEntityTypeBotCommand, Offset: 0, Length: 21}))
	assert.True(t, cmd.MentionsBot)
	assert.Equal(t, "/status now", cmd.Text, "the command parser sees the command without the address")

	broken := inbound(t, msg("short", models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 3, Length: 99}))
	assert.False(t, broken.MentionsBot, "an entity past the text is ignored, not a crash")

	dm := inbound(t, &models.Update{ID: 2, Message: &models.Message{ID: 3, Chat: models.Chat{ID: 11, Type: models.ChatTypePrivate}, From: &alice, Text: "hi"}})
	assert.Equal(t, pipeline.ChatDirect, dm.ChatType)
}

func TestPhotoWithCaptionBecomesAMediaReference(t *testing.T) {
	in := inbound(t, &models.Update{ID: 1, Message: &models.Message{ID: 3, Chat: forum, From: &alice, Caption: "what is this?",
		Photo: []models.PhotoSize{{FileID: "small", Width: 90}, {FileID: "large", Width: 1280}}}})
	assert.Equal(t, "what is this?", in.Text)
	require.Len(t, in.Media, 1)
	assert.Equal(t, pipeline.Media{Kind: "photo", Ref: "large", MimeType: "image/jpeg"}, in.Media[0])

	doc := inbound(t, &models.Update{ID: 2, Message: &models.Message{ID: 4, Chat: forum, From: &alice,
		Document: &models.Document{FileID: "doc1", FileName: "report.pdf", MimeType: "application/pdf"}}})
	assert.Empty(t, doc.Text)
	assert.Equal(t, []pipeline.Media{{Kind: "document", Ref: "doc1", MimeType: "application/pdf", Name: "report.pdf"}}, doc.Media)
}

// A file's name is clipped and loses its control characters, as every
// platform's does, so the message is accepted; an attachment without a
// file ID is none, and a photo sent in many sizes is one photo.
func TestHostileFileNamesAreClippedAndFilesWithoutIDsLeftOut(t *testing.T) {
	sizes := make([]models.PhotoSize, 500)
	for i := range sizes {
		sizes[i] = models.PhotoSize{FileID: fmt.Sprintf("size-%d", i), FileSize: -1}
	}
	in := inbound(t, &models.Update{ID: 1, Message: &models.Message{ID: 3, Chat: forum, From: &alice, Photo: sizes,
		Document: &models.Document{FileID: "doc1", FileName: "../../etc/passwd\x00\x1b[31m\n" + strings.Repeat("n", 100_000), FileSize: 1 << 62},
		Audio:    &models.Audio{FileID: "", FileName: "lost.mp3"},
		Voice:    &models.Voice{FileID: "voice1", Duration: -5, FileSize: -1}}})
	require.NoError(t, in.Validate())
	require.Len(t, in.Media, 3)
	assert.Equal(t, pipeline.Media{Kind: "photo", Ref: "size-499", MimeType: "image/jpeg"}, in.Media[0])
	assert.Equal(t, "document", in.Media[1].Kind)
	assert.Len(t, in.Media[1].Name, pipeline.MaxNameBytes)
	assert.True(t, strings.HasPrefix(in.Media[1].Name, "../../etc/passwd[31mnnn"), in.Media[1].Name[:30])
	assert.Equal(t, pipeline.Media{Kind: "voice", Ref: "voice1"}, in.Media[2])

	caption := inbound(t, &models.Update{ID: 2, Message: &models.Message{ID: 4, Chat: forum, From: &alice, Caption: "see this",
		Photo: []models.PhotoSize{{FileID: ""}}}})
	assert.Empty(t, caption.Media, "a photo without a file ID is nothing to fetch")
	assert.Equal(t, "see this", caption.Text)
	ev := Normalize(testBot, &models.Update{ID: 3, Message: &models.Message{ID: 5, Chat: forum, From: &alice,
		Photo: []models.PhotoSize{{FileID: ""}}}}, time.Now())
	assert.Nil(t, ev.Inbound)
	assert.Equal(t, "message without text or media", ev.Skip)
}

// The session's dedupe then drops the edit; cmd/replyflow's
// TestTelegramEditedMessageIsDroppedByTheSessionsDedupe runs it end to end.
func TestEditedMessageKeepsItsID(t *testing.T) {
	first := inbound(t, &models.Update{ID: 1, Message: &models.Message{ID: 8, Chat: forum, From: &alice, Text: "helo"}})
	edited := inbound(t, &models.Update{ID: 2, EditedMessage: &models.Message{ID: 8, Chat: forum, From: &alice, Text: "hello"}})
	assert.Equal(t, first.MessageID, edited.MessageID)
}

func TestUnusableUpdatesAreSkippedWithAReason(t *testing.T) {
	for name, u := range map[string]*models.Update{
		"sticker only": {ID: 1, Message: &models.Message{ID: 1, Chat: forum, From: &alice, Sticker: &models.Sticker{FileID: "s"}}},
		"no sender":    {ID: 2, Message: &models.Message{ID: 2, Chat: forum, Text: "x"}},
		"channel post": {ID: 3, ChannelPost: &models.Message{ID: 3, Chat: models.Chat{ID: -5, Type: models.ChatTypeChannel}, Text: "x"}},
		"poll":         {ID: 4, Poll: &models.Poll{ID: "p"}},
	} {
		ev := Normalize(testBot, u, now)
		assert.Nil(t, ev.Inbound, name)
		assert.Nil(t, ev.Feedback, name)
		assert.NotEmpty(t, ev.Skip, name)
	}
}

func TestButtonPressBecomesAnActionOnTheButtonsMessage(t *testing.T) {
	ev := Normalize(testBot, &models.Update{ID: 5, CallbackQuery: &models.CallbackQuery{ID: "777", From: bob, Data: "approve:p1-1",
		Message: models.MaybeInaccessibleMessage{Message: &models.Message{ID: 40, MessageThreadID: 7, IsTopicMessage: true, Chat: forum}}}}, now)
	require.NotNil(t, ev.Inbound)
	assert.Equal(t, "777", ev.CallbackID)
	in := *ev.Inbound
	require.NoError(t, in.Validate())
	assert.Equal(t, "approve:p1-1", in.Action)
	assert.Equal(t, "40", in.ReplyTo)
	assert.Equal(t, "cb-777", in.MessageID)
	assert.Equal(t, "topic-7", in.ThreadID)
	assert.Equal(t, "12", in.SenderID)
}

func TestReactionBecomesFeedback(t *testing.T) {
	ev := Normalize(testBot, &models.Update{ID: 31, MessageReaction: &models.MessageReactionUpdated{
		Chat: forum, MessageID: 41, User: &alice, Date: int(now.Unix()),
		NewReaction: []models.ReactionType{{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Emoji: "👍"}}},
	}}, now)
	require.NotNil(t, ev.Feedback)
	f := *ev.Feedback
	require.NoError(t, f.Validate())
	assert.Equal(t, []string{"👍"}, f.Emoji)
	assert.Equal(t, "41", f.MessageID)
	assert.Equal(t, "tg-1000-31", f.EventID)
	assert.Equal(t, "telegram:-100123:41", f.UnresolvedID())
	assert.Equal(t, "session:telegram:1000:-100123", f.Session().WorkflowID())

	own := Normalize(testBot, &models.Update{ID: 32, MessageReaction: &models.MessageReactionUpdated{Chat: forum, MessageID: 41, User: &models.User{ID: testBot.ID}}}, now)
	assert.Nil(t, own.Feedback, "the bot's own lifecycle reactions are not feedback")
}

// A message the gateway gets well after its date (kept by Telegram while
// no gateway ran) carries that date, so that its reply can say how late
// it is; a live one carries the gateway's clock.
func TestLateMessageCarriesItsDate(t *testing.T) {
	for _, c := range []struct {
		name       string
		sent, want time.Time
	}{
		{"live, in the same second", now.Add(-time.Second), now},
		{"kept for an hour", now.Add(-time.Hour), now.Add(-time.Hour)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &models.Message{ID: 7, Chat: models.Chat{ID: 11, Type: models.ChatTypePrivate}, From: &alice, Text: "hi", Date: int(c.sent.Unix())}
			assert.Equal(t, c.want, inbound(t, &models.Update{ID: 1, Message: m}).ReceivedAt)
		})
	}
}
