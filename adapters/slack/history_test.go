package slack

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// The catch-up's reads page and fail as slack-go's do: the same
// messages, cursor and has_more, and the same errors for a 429 (with its
// Retry-After), a server error and an ok:false, which the catch-up tells
// apart (a backoff of Slack's asking, a retry, a conversation dropped).
func TestHistoryReadsPageAndFailAsSlackGo(t *testing.T) {
	fake := startFake(t)
	for _, text := range []string{"one", "two", "three"} {
		fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: text})
	}
	ctx := testContext(t)
	web := newHistoryAPI(&http.Client{}, fake.BotToken, fake.APIURL())
	api := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()))

	for cursor, pages := "", 0; ; pages++ {
		require.Less(t, pages, 3)
		want, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		got, err := web.history(ctx, "C1", "", cursor, 2)
		require.NoError(t, err)
		require.Len(t, got.Messages, len(want.Messages))
		for i, raw := range got.Messages {
			m, salvaged, err := decodeMessage(raw)
			require.NoError(t, err)
			require.Nil(t, salvaged)
			assert.Equal(t, want.Messages[i], m)
		}
		assert.Equal(t, want.HasMore, got.HasMore)
		assert.Equal(t, want.ResponseMetaData.NextCursor, got.ResponseMetadata.Cursor)
		if cursor = got.ResponseMetadata.Cursor; !got.HasMore {
			assert.Equal(t, 1, pages, "three messages, two a page")
			break
		}
	}

	for _, fault := range []slacktest.Fault{slacktest.RateLimited(7), slacktest.ServerError(), slacktest.SlackError("not_in_channel")} {
		fake.FailNext("conversations.history", 1, fault)
		_, want := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"})
		fake.FailNext("conversations.history", 1, fault)
		_, got := web.history(ctx, "C1", "", "", 100)
		require.Error(t, got, "%+v", fault)
		assert.Equal(t, want, got, "%+v", fault)
	}
	var limited *slack.RateLimitedError
	fake.FailNext("conversations.replies", 1, slacktest.RateLimited(7))
	_, err := web.replies(ctx, "C1", "1.000001", "", 100)
	require.True(t, errors.As(err, &limited), "%v", err)
	assert.Equal(t, 7*time.Second, limited.RetryAfter)
	_, err = web.replies(ctx, "C1", "1.000001", "", 100)
	var refused slack.SlackErrorResponse
	require.True(t, errors.As(err, &refused), "%v", err)
	assert.Equal(t, "thread_not_found", refused.Err)

	for _, call := range fake.Calls("conversations.history", "conversations.replies") {
		assert.NotContains(t, []string{"invalid_auth", "not_authed"}, call.Error, "the bot token goes with every read")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = web.history(cancelled, "C1", "", "", 100)
	assert.ErrorIs(t, err, context.Canceled)
}
