package slack

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// A user's message that slack-go cannot read, within the dedupe window
// where the bot posts, neither stops the bot from posting there nor
// hides the bot's chunk from a retry: a Send posts once, and a retried
// Send with the same key, by another client or after a lost answer,
// finds the first post and posts nothing.
func TestSendAmidAMessageSlackGoCannotRead(t *testing.T) {
	for _, where := range []string{"channel", "thread"} {
		t.Run(where, func(t *testing.T) {
			fake := startFake(t)
			ctx := testContext(t)
			parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
			odd := slacktest.Post{Channel: "C1", User: "U2", Text: "a message with a future block", Wire: map[string]any{"blocks": futureBlock}}
			d := pipeline.Delivery{Session: pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, IdempotencyKey: "turn1/0", Text: "once", Total: 2}
			if where == "thread" {
				odd.ThreadTS, d.ThreadID = parent.TS, parent.TS
			}
			fake.AddMessage(odd)

			// slack-go fails on the lookup's page, as it did in findChunk.
			api := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()))
			if where == "thread" {
				_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent.TS, IncludeAllMetadata: true})
				require.Error(t, err, "slack-go reads the thread whole: it proves nothing of the lookup")
			} else {
				_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", IncludeAllMetadata: true})
				require.Error(t, err, "slack-go reads the history whole: it proves nothing of the lookup")
			}

			lookup := "conversations.history"
			if where == "thread" {
				lookup = "conversations.replies"
			}
			before := len(fake.Calls(lookup))
			newClient := func() *Client {
				c, err := NewClient(ClientConfig{Token: fake.BotToken, APIURL: fake.APIURL(), PostInterval: -1})
				require.NoError(t, err)
				return c
			}
			c := newClient()
			ts, err := c.Send(ctx, d)
			require.NoError(t, err)
			sent := fake.Sent("C1")
			require.Len(t, sent, 1)
			assert.Equal(t, ts, sent[0].TS)
			assert.Equal(t, d.ThreadID, sent[0].ThreadTS)

			// Another worker, whose memory holds nothing, looks and finds it.
			again, err := newClient().Send(ctx, d)
			require.NoError(t, err)
			assert.Equal(t, ts, again)
			assert.Len(t, fake.Sent("C1"), 1, "the retry posted again")

			// A post whose answer was lost is found by its retry.
			d.IdempotencyKey, d.Text, d.Index = "turn1/1", "twice?", 1
			fake.FailNext("chat.postMessage", 1, slacktest.AnswerLost())
			_, err = c.Send(ctx, d)
			kind, _ := adapters.Classify(err)
			require.Equal(t, adapters.Transient, kind, "%v", err)
			ts2, err := c.Send(ctx, d)
			require.NoError(t, err)
			sent = fake.Sent("C1")
			require.Len(t, sent, 2, "the retry after a lost answer posted again")
			assert.Equal(t, ts2, sent[1].TS)
			assert.Len(t, fake.Calls("chat.postMessage"), 2)

			// Each Send looked once, with the metadata, within the window.
			lookups := fake.Calls(lookup)[before:]
			require.Len(t, lookups, 4)
			for _, call := range lookups {
				assert.Equal(t, "1", call.Params["include_all_metadata"], "the chunk's key is in its metadata")
				assert.NotEmpty(t, call.Params["oldest"], "the lookup stays within the dedupe window")
			}
		})
	}
}

// The lookup reads of each message only who posted it, its ts and its
// metadata: a message not the bot's is passed over whatever it holds,
// the bot's chunk is found whatever else it holds, and a message that
// may be the bot's but whose author, ts or metadata cannot be read fails
// the lookup, as posting blind might post twice.
func TestChunkInReadsOnlyWhatTellsTheChunk(t *testing.T) {
	const bot, key = "UBOT", "turn1/0"
	const chunk = `{"type":"message","user":"UBOT","ts":"2.2","text":"mine","metadata":{"event_type":"replyflow_chunk","event_payload":{"key":"turn1/0"}}`
	const block = `,"blocks":[{"type":"future_block","block_id":7}]`
	for _, tc := range []struct {
		name    string
		page    []string
		wantTS  string
		wantErr bool
	}{
		{"the bot's chunk with a block slack-go refuses", []string{chunk + block + `}`}, "2.2", false},
		{"the bot's chunk with an edit time that is a number", []string{chunk + `,"edited":{"user":"UBOT","ts":1700000009}}`}, "2.2", false},
		{"a user's message with a block slack-go refuses, then the chunk", []string{`{"user":"U1","ts":"1.1","text":"hi"` + block + `}`, chunk + `}`}, "2.2", false},
		{"a user's message whose ts and metadata are odd", []string{`{"user":"U1","ts":{"s":1},"metadata":"none"}`, chunk + `}`}, "2.2", false},
		{"another bot's message, without user", []string{`{"subtype":"bot_message","bot_id":"B2","ts":7}`}, "", false},
		{"the bot's message of another key", []string{`{"user":"UBOT","ts":"2.2","metadata":{"event_type":"replyflow_chunk","event_payload":{"key":"turn1/1"}}}`}, "", false},
		{"the bot's message without metadata", []string{`{"user":"UBOT","ts":"2.2","text":"hi"` + block + `}`}, "", false},
		{"a message whose author is no string", []string{`{"user":7,"ts":"1.1"}`, chunk + `}`}, "", true},
		{"the bot's message whose ts is no string", []string{`{"user":"UBOT","ts":2.2,"metadata":{"event_type":"replyflow_chunk","event_payload":{"key":"turn1/0"}}}`}, "", true},
		{"the bot's message whose metadata is odd", []string{`{"user":"UBOT","ts":"2.2","metadata":{"event_type":"replyflow_chunk","event_payload":["turn1/0"]}}`}, "", true},
		{"a message that is no object", []string{`"not an object"`}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var page []json.RawMessage
			for _, m := range tc.page {
				require.True(t, json.Valid([]byte(m)), m)
				page = append(page, json.RawMessage(m))
			}
			ts, found, err := chunkIn(page, bot, key)
			if tc.wantErr {
				assert.Error(t, err)
				assert.False(t, found)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantTS != "", found)
			assert.Equal(t, tc.wantTS, ts)
		})
	}
}
