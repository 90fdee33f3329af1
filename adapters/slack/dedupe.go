package slack

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters"
)

// Where findChunk looks: a thread is read oldest first from the window's
// start, a channel newest first; both up to these many messages, one page.
const (
	threadLookupLimit  = 200
	channelLookupLimit = 20
)

// findChunk looks for a message of the bot, posted within the dedupe
// window in the thread (or top-level in the channel when thread is ""),
// whose metadata carries key, and returns its ts.
//
// It runs before every post, not only on retries: the Delivery does not
// say which attempt it is, and a retry may run on another worker whose
// memory holds nothing, so no cheap signal tells a first try from a
// retry. The cost is one read per chunk (conversations.replies or
// .history, Tier 3 for an internal app). A failed lookup fails the Send,
// classified as any call: posting blind could post twice.
func (c *Client) findChunk(ctx context.Context, channel, thread, key string) (string, bool, error) {
	if key == "" {
		return "", false, nil
	}
	bot, err := c.botUser(ctx)
	if err != nil {
		return "", false, err
	}
	oldest := slackTS(time.Now().Add(-c.cfg.DedupeWindow))
	var msgs []slack.Message
	if thread != "" {
		const op = "conversations.replies"
		if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
			return "", false, err
		}
		msgs, _, _, err = c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: thread, Oldest: oldest, Limit: threadLookupLimit, IncludeAllMetadata: true,
		})
		if slackCode(err) == "thread_not_found" {
			err = nil // the post will fail permanently with the same code
		}
		if err != nil {
			return "", false, c.failed(channel, op, err)
		}
	} else {
		const op = "conversations.history"
		if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
			return "", false, err
		}
		resp, err := c.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channel, Oldest: oldest, Limit: channelLookupLimit, IncludeAllMetadata: true,
		})
		if err != nil {
			return "", false, c.failed(channel, op, err)
		}
		msgs = resp.Messages
	}
	for _, m := range msgs {
		if m.User == bot && m.Metadata.EventType == ChunkEventType && m.Metadata.EventPayload["key"] == key {
			return m.Timestamp, true, nil
		}
	}
	return "", false, nil
}

// botUser is the bot's user ID, from the config or auth.test (asked once
// it succeeds).
func (c *Client) botUser(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.botUserID != "" {
		return c.botUserID, nil
	}
	resp, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return "", classify("auth.test", err)
	}
	c.botUserID = resp.UserID
	return c.botUserID, nil
}

// slackTS is t as a Slack timestamp ("seconds.micros").
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}
