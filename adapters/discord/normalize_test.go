package discord

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

const bot = "900000000000000001"

var (
	now         = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	inGeneral   = Place{ChannelID: general, GuildID: guildID}
	inThread    = Place{ChannelID: thread, GuildID: guildID, ParentID: general}
	inDM        = Place{ChannelID: dmID, Direct: true}
	adaUser     = &discordgo.User{ID: ada, Username: "ada", GlobalName: "Ada L."}
	botUser     = &discordgo.User{ID: bot, Username: "replyflow", Bot: true}
	peerBotUser = &discordgo.User{ID: peerBot, Username: "peer", Bot: true}
)

func msg(id string, author *discordgo.User, content string) *discordgo.Message {
	return &discordgo.Message{ID: id, ChannelID: general, Author: author, Content: content, Type: discordgo.MessageTypeDefault}
}

func TestNormalizeMessageKeysAndFlags(t *testing.T) {
	botMessage := msg("700", botUser, "an answer")
	reply := func(to *discordgo.Message, text string) *discordgo.Message {
		m := msg("701", adaUser, text)
		m.Type = discordgo.MessageTypeReply
		m.MessageReference = &discordgo.MessageReference{MessageID: to.ID, ChannelID: general}
		m.ReferencedMessage = to
		return m
	}
	withMember := msg("702", adaUser, "hi all")
	withMember.Member = &discordgo.Member{Nick: "ada the nick"}
	hook := msg("703", &discordgo.User{ID: "800", Username: "ci"}, "build failed")
	hook.WebhookID = "800"
	files := msg("704", adaUser, "")
	files.Attachments = []*discordgo.MessageAttachment{
		{ID: "1", URL: "https://cdn.discordapp.com/attachments/200/1/cat.png", Filename: "cat.png", ContentType: "image/png"},
		{ID: "2", URL: "https://cdn.discordapp.com/attachments/200/2/notes.txt", Filename: "notes.txt", ContentType: "text/plain"},
	}
	forward := msg("705", adaUser, "look")
	forward.MessageReference = &discordgo.MessageReference{MessageID: "999", ChannelID: "123"}

	tests := []struct {
		name  string
		m     *discordgo.Message
		place Place
		want  pipeline.Inbound // Channel, Account, ReceivedAt, SenderID and MessageID are checked apart
		skip  string
	}{
		{name: "a mention in a channel is stripped", m: msg("1", adaUser, "<@"+bot+"> /status"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "/status", MentionsBot: true, SenderName: "Ada L."}},
		{name: "the legacy nickname mention too, anywhere", m: msg("1", adaUser, "hey <@!"+bot+"> look, <@"+bot+">"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "hey look,", MentionsBot: true, SenderName: "Ada L."}},
		{name: "someone else mentioned", m: msg("1", adaUser, "<@42> what do you think"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "<@42> what do you think", MentionsOthers: true, SenderName: "Ada L."}},
		{name: "both mentioned: addressed to the bot", m: msg("1", adaUser, "<@42> <@"+bot+"> settle this"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "<@42> settle this", MentionsBot: true, SenderName: "Ada L."}},
		{name: "a role mention is neither", m: msg("1", adaUser, "<@&77> ping"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "<@&77> ping", SenderName: "Ada L."}},
		{name: "a thread is a lane of its parent's session", m: msg("1", adaUser, "in the thread"), place: inThread,
			want: pipeline.Inbound{ChatID: general, ThreadID: thread, ChatType: pipeline.ChatGroup, Text: "in the thread", SenderName: "Ada L."}},
		{name: "a DM is direct", m: msg("1", adaUser, "psst"), place: inDM,
			want: pipeline.Inbound{ChatID: dmID, ChatType: pipeline.ChatDirect, Text: "psst", SenderName: "Ada L."}},
		{name: "a reply to the bot", m: reply(botMessage, "thanks"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "thanks", ReplyTo: "700", ReplyToBot: true, SenderName: "Ada L."}},
		{name: "a reply to someone else", m: reply(msg("699", peerBotUser, "beep"), "no"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "no", ReplyTo: "699", SenderName: "Ada L."}},
		{name: "a reply to a deleted message", m: reply(&discordgo.Message{ID: "698"}, "hm"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "hm", ReplyTo: "698", SenderName: "Ada L."}},
		{name: "a forward quotes nothing", m: forward, place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "look", SenderName: "Ada L."}},
		{name: "the member's nickname names the sender", m: withMember, place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "hi all", SenderName: "ada the nick"}},
		{name: "another bot is flagged", m: msg("1", peerBotUser, "beep"), place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "beep", SenderIsBot: true, SenderName: "peer"}},
		{name: "a webhook is a bot", m: hook, place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, Text: "build failed", SenderIsBot: true, SenderName: "ci"}},
		{name: "attachments are references", m: files, place: inGeneral,
			want: pipeline.Inbound{ChatID: general, ChatType: pipeline.ChatGroup, SenderName: "Ada L.", Media: []pipeline.Media{
				{Kind: "photo", Ref: "https://cdn.discordapp.com/attachments/200/1/cat.png", MimeType: "image/png", Name: "cat.png"},
				{Kind: "document", Ref: "https://cdn.discordapp.com/attachments/200/2/notes.txt", MimeType: "text/plain", Name: "notes.txt"},
			}}},
		{name: "the bot's own message", m: botMessage, place: inGeneral, skip: "the bot's own message"},
		{name: "a join", m: &discordgo.Message{ID: "1", Author: adaUser, Type: discordgo.MessageTypeGuildMemberJoin}, place: inGeneral, skip: "system message type 7"},
		{name: "only the bot's mention", m: msg("1", adaUser, "<@"+bot+">"), place: inGeneral, skip: "without text"},
		{name: "empty: the intent is missing", m: msg("1", adaUser, ""), place: inGeneral, skip: "Message Content Intent"},
		{name: "no author", m: &discordgo.Message{ID: "1", Content: "x"}, place: inGeneral, skip: "without an author"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NormalizeMessage(bot, tc.m, tc.place, now)
			if tc.skip != "" {
				require.Nil(t, ev.Inbound)
				assert.Contains(t, ev.Skip, tc.skip)
				return
			}
			require.NotNil(t, ev.Inbound, ev.Skip)
			in := *ev.Inbound
			require.NoError(t, in.Validate())
			assert.Equal(t, pipeline.SessionKey{Channel: "discord", Account: bot, Chat: tc.want.ChatID}, in.Session())
			assert.Equal(t, tc.m.ID, in.MessageID)
			assert.Equal(t, tc.m.Author.ID, in.SenderID)
			assert.Equal(t, now, in.ReceivedAt)
			tc.want.Channel, tc.want.Account, tc.want.MessageID, tc.want.SenderID, tc.want.ReceivedAt = Channel, bot, in.MessageID, in.SenderID, now
			assert.Equal(t, tc.want, in)
		})
	}
}

func TestNormalizeMessageCutsLongText(t *testing.T) {
	ev := NormalizeMessage(bot, msg("1", adaUser, strings.Repeat("é", pipeline.MaxTextBytes)), inGeneral, now)
	require.NotNil(t, ev.Inbound)
	assert.LessOrEqual(t, len(ev.Inbound.Text), pipeline.MaxTextBytes)
	assert.True(t, strings.HasSuffix(ev.Inbound.Text, pipeline.TruncatedMark))
}

func TestNormalizeReaction(t *testing.T) {
	on := func(author, user, emoji, emojiID string) Reaction {
		return Reaction{UserID: user, ChannelID: thread, MessageID: "700", GuildID: guildID, MessageAuthorID: author,
			Emoji: discordgo.Emoji{Name: emoji, ID: emojiID}}
	}
	ev := NormalizeReaction(bot, on(bot, ada, "👍", ""), inThread, now)
	require.NotNil(t, ev.Feedback, ev.Skip)
	assert.Equal(t, pipeline.Feedback{Channel: Channel, Account: bot, ChatID: general, EventID: "rx-700-" + ada + "-1f44d",
		MessageID: "700", SenderID: ada, Emoji: []string{"👍"}, At: now}, *ev.Feedback)

	custom := NormalizeReaction(bot, on(bot, ada, "party", "55"), inThread, now)
	require.NotNil(t, custom.Feedback, custom.Skip)
	assert.Equal(t, []string{"party:55"}, custom.Feedback.Emoji)
	assert.Equal(t, "rx-700-"+ada+"-55", custom.Feedback.EventID)

	assert.Contains(t, NormalizeReaction(bot, on(ada, peerBot, "👍", ""), inThread, now).Skip, "someone else's message")
	assert.Contains(t, NormalizeReaction(bot, on(bot, bot, "👀", ""), inThread, now).Skip, "the bot's own reaction")
	assert.NotNil(t, NormalizeReaction(bot, on("", ada, "👍", ""), inThread, now).Feedback, "without the author, a reaction is taken")
}

func TestNormalizeInteraction(t *testing.T) {
	press := func(user *discordgo.User, member *discordgo.Member, data discordgo.InteractionData) *discordgo.Interaction {
		return &discordgo.Interaction{ID: "555", Type: discordgo.InteractionMessageComponent, Token: "itoken-555",
			ChannelID: thread, User: user, Member: member, Data: data, Message: msg("700", botUser, "run it?")}
	}
	button := discordgo.MessageComponentInteractionData{CustomID: "approve:p1", ComponentType: discordgo.ButtonComponent}
	ev := NormalizeInteraction(bot, press(nil, &discordgo.Member{User: adaUser}, button), inThread, now)
	require.NotNil(t, ev.Inbound, ev.Skip)
	assert.Equal(t, pipeline.Inbound{Channel: Channel, Account: bot, ChatID: general, ChatType: pipeline.ChatGroup, MessageID: "555",
		SenderID: ada, SenderName: "Ada L.", ReplyTo: "700", ReplyToBot: true, Action: "approve:p1", ReplyToken: "itoken-555",
		ThreadID: thread, ReceivedAt: now}, *ev.Inbound)

	dm := NormalizeInteraction(bot, press(adaUser, nil, button), inDM, now)
	require.NotNil(t, dm.Inbound, dm.Skip)
	assert.Equal(t, pipeline.ChatDirect, dm.Inbound.ChatType)
	assert.Equal(t, ada, dm.Inbound.SenderID)

	menu := discordgo.MessageComponentInteractionData{CustomID: "pick", ComponentType: discordgo.SelectMenuComponent}
	assert.Contains(t, NormalizeInteraction(bot, press(adaUser, nil, menu), inDM, now).Skip, "not a button")
	command := &discordgo.Interaction{ID: "1", Type: discordgo.InteractionApplicationCommand}
	assert.Contains(t, NormalizeInteraction(bot, command, inDM, now).Skip, "not a button press")
}

func TestSnowflakeAtAgreesWithDiscord(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 123e6, time.UTC)
	assert.Equal(t, discordtest.SnowflakeAt(at), uintString(SnowflakeAt(at)))
	// Discord's documented example: 175928847299117063 was made at
	// 2016-04-30 11:18:25.796 UTC.
	assert.Equal(t, time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC).UnixMilli(),
		int64(175928847299117063>>22)+discordEpoch)
	assert.Equal(t, uint64(175928847299117063)>>22<<22, SnowflakeAt(time.UnixMilli(int64(175928847299117063>>22)+discordEpoch)))
}

func uintString(n uint64) string { return strconv.FormatUint(n, 10) }

// A message the gateway gets well after its timestamp (fetched from the
// history after a READY) carries that time, so that its reply can say
// how late it is; a live one carries the gateway's clock.
func TestNormalizeMessageStampsALateMessageWithItsTime(t *testing.T) {
	for _, c := range []struct {
		name       string
		sent, want time.Time
	}{
		{"live", now.Add(-time.Second), now},
		{"fetched after an outage", now.Add(-2 * time.Hour), now.Add(-2 * time.Hour)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := msg("702", adaUser, "hi")
			m.Timestamp = c.sent
			ev := NormalizeMessage(bot, m, inGeneral, now)
			require.NotNil(t, ev.Inbound, ev.Skip)
			assert.Equal(t, c.want, ev.Inbound.ReceivedAt)
		})
	}
}
