package slack

import (
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// A channel message goes on with the channel's member count (the bot not
// counted), asked once per channel a minute; a DM goes on without one; a
// count Slack will not give holds nothing up and is asked again only
// after the minute.
func TestChannelMessagesCarryTheirMemberCount(t *testing.T) {
	fake := startFake(t) // C1 has 7 members
	fake.AddChannel(slacktest.Channel{ID: "D1", Members: 2})
	fake.AddChannel(slacktest.Channel{ID: "C2", Members: 3})
	clock := testNow
	sink := newSink()
	r, err := NewReceiver(ReceiverConfig{
		Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink,
		Now:          func() time.Time { return clock },
		CountMembers: ConversationMembers(slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()))),
	})
	require.NoError(t, err)
	ctx := testContext(t)
	post := func(channel, text string) {
		t.Helper()
		_, events := fake.AddMessage(slacktest.Post{Channel: channel, User: "U1", Text: text})
		ev, err := Parse(fake.EventCallback(events[0]))
		require.NoError(t, err)
		require.NoError(t, r.HandleEvent(ctx, ev))
	}

	post("C1", "one")
	post("C1", "two")
	post("D1", "hi")
	fake.FailNext("conversations.info", 1, slacktest.SlackError("missing_scope"))
	post("C2", "three")
	clock = clock.Add(2 * time.Minute)
	post("C2", "four")

	accepted := sink.waitAccepted(t, ctx, 5)
	require.NotNil(t, accepted[0].Membership)
	assert.Equal(t, 6, accepted[0].Membership.Humans, "seven members but the bot")
	assert.Equal(t, testNow.UTC(), accepted[0].Membership.FetchedAt)
	assert.Equal(t, accepted[0].Membership, accepted[1].Membership, "the minute's count again")
	assert.Nil(t, accepted[2].Membership, "a DM is two, known without asking")
	assert.Nil(t, accepted[3].Membership, "Slack refused: the message went on without a count")
	require.NotNil(t, accepted[4].Membership, "asked again after the minute")
	assert.Equal(t, 2, accepted[4].Membership.Humans)
	var asked []string
	for _, c := range fake.Calls("conversations.info") {
		asked = append(asked, c.Params["channel"])
	}
	assert.Equal(t, []string{"C1", "C2", "C2"}, asked)
}
