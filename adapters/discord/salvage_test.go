package discord

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

// unknownComponent is a component of a type discordgo does not know.
var unknownComponent = json.RawMessage(`[{"type":99,"id":1}]`)

func TestDiscordgoFailsOnAComponentTypeItDoesNotKnow(t *testing.T) {
	var m discordgo.Message
	err := json.Unmarshal([]byte(`{"id":"1","content":"hi","author":{"id":"2"},"components":`+string(unknownComponent)+`}`), &m)
	require.ErrorContains(t, err, "unknown component type: 99")
	assert.Empty(t, m.ID, "discordgo hands on an empty message")
}

func TestSalvageKeepsWhatNormalizeReads(t *testing.T) {
	full := `{"id":"300","channel_id":"200","guild_id":"100","type":19,"content":"<@9> look",
		"author":{"id":"5","username":"ada","global_name":"Ada"},"member":{"nick":"Countess"},
		"webhook_id":"77","timestamp":"2026-01-02T03:04:05.000000+00:00",
		"attachments":[{"id":"8","filename":"cat.png","content_type":"image/png","url":"https://cdn/cat.png"}],
		"message_reference":{"message_id":"299","channel_id":"200"},
		"referenced_message":{"id":"299","author":{"id":"9"},"components":%s},
		"embeds":[{"title":"t"}],"components":%s}`
	// Only an embed: NormalizeMessage's reason for skipping it reads them.
	embedOnly := `{"id":"301","channel_id":"200","type":0,"content":"","author":{"id":"5"},
		"embeds":[{"title":"t"}],"components":%s}`
	stickerOnly := `{"id":"302","channel_id":"200","type":0,"content":"","author":{"id":"5"},
		"sticker_items":[{"id":"1","name":"s"}],"components":%s}`
	place := Place{ChannelID: "200", GuildID: "100"}
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC) // late: ReceivedAt is the message's timestamp
	for _, whole := range []string{full, embedOnly, stickerOnly} {
		var want discordgo.Message
		require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(whole, "%s", "[]")), &want))
		got, cause, err := readMessage(json.RawMessage(strings.ReplaceAll(whole, "%s", string(unknownComponent))))
		require.NoError(t, err)
		require.ErrorContains(t, cause, "unknown component type: 99")
		assert.Equal(t, NormalizeMessage("9", &want, place, now), NormalizeMessage("9", got, place, now), want.ID)
		assert.Equal(t, want.ChannelID, got.ChannelID)
	}
	var want discordgo.Message
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(full, "%s", "[]")), &want))
	in := NormalizeMessage("9", &want, place, now).Inbound
	require.NotNil(t, in)
	assert.True(t, in.ReplyToBot && in.SenderIsBot && in.MentionsBot && in.ReceivedAt.Before(now) && in.SenderName == "Countess" && len(in.Media) == 1,
		"the message exercises each field: %+v", in)

	_, _, err := readMessage(json.RawMessage(`{"id":{"x":1},"components":[{"type":99}]}`))
	assert.ErrorContains(t, err, "read again with only the fields replyflow uses", "unreadable even so")
}

func TestAMessageWithAComponentDiscordgoDoesNotKnowArrivesOnce(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	odd := s.fake.Post(discordtest.Post{Channel: general, Author: peerBot, Content: "a card", Components: unknownComponent})
	reply := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "about the card", ReplyTo: odd.ID})
	after := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "after"})
	got := byID(s.sink.waitAccepted(t, odd.ID, reply.ID, after.ID))
	assert.Equal(t, []string{odd.ID, reply.ID, after.ID}, s.sink.acceptedIDs(), "each once, in order")
	assert.Equal(t, "a card", got[odd.ID].Text)
	assert.Equal(t, peerBot, got[odd.ID].SenderID)
	assert.True(t, got[odd.ID].SenderIsBot)
	assert.Equal(t, general, got[odd.ID].ChatID)
	assert.Equal(t, odd.ID, got[reply.ID].ReplyTo)
	line := s.logs.waitFor(t, "Discord message read without the fields replyflow does not use", "message="+odd.ID, "discord_channel="+general, "unknown component type: 99")
	assert.NotContains(t, line, "a card")
	assert.Len(t, s.logs.with("read without the fields replyflow does not use"), 2, "the message and the reply quoting it")
}

func TestTheCatchUpReadsAPageWithMessagesDiscordgoCannotRead(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	first := s.run(t)
	s.connected(t, first)
	before := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "before"})
	s.sink.waitAccepted(t, before.ID)
	first.stop(t)
	s.clock.Skip(time.Second)

	one := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "one"})
	odd := s.fake.Post(discordtest.Post{Channel: general, Author: peerBot, Content: "a card", Components: unknownComponent})
	broken := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "lost", Wire: map[string]any{"author": "nobody"}})
	noID := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "lost too", Wire: map[string]any{"id": map[string]any{"x": 1}}})
	two := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "two"})

	s.health = &health{}
	second := s.run(t)
	s.connected(t, second)
	got := byID(s.sink.waitAccepted(t, one.ID, odd.ID, two.ID))
	later := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "later"})
	s.sink.waitAccepted(t, later.ID)
	assert.Equal(t, []string{before.ID, one.ID, odd.ID, two.ID, later.ID}, s.sink.acceptedIDs(), "each readable message once, in order")
	assert.Equal(t, "a card", got[odd.ID].Text)
	s.logs.waitFor(t, "history read without the fields replyflow does not use", "message="+odd.ID)
	line := s.logs.waitFor(t, "history not understood; skipped", "message="+broken.ID)
	assert.NotContains(t, line, "lost")
	s.logs.waitFor(t, "history not understood; skipped", "message= ") // noID's
	assert.Empty(t, s.logs.with("history not handed on yet"), "the page is read at once")
	assert.NotContains(t, s.sink.acceptedIDs(), noID.ID)
}
