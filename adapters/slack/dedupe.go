package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
//
// The page is read through historyAPI and each message on its own
// (chunkIn), not through slack-go, which fails the whole page on one
// message it cannot decode: one user's message with a block type
// slack-go does not know yet would fail every Send there for as long
// as it stays within the window.
func (c *Client) findChunk(ctx context.Context, channel, thread, key string) (string, bool, error) {
	if key == "" {
		return "", false, nil
	}
	bot, err := c.botUser(ctx)
	if err != nil {
		return "", false, err
	}
	oldest := slackTS(time.Now().Add(-c.cfg.DedupeWindow))
	op, read := "conversations.history", func() (historyPage, error) {
		return c.history.history(ctx, channel, oldest, "", channelLookupLimit)
	}
	if thread != "" {
		op, read = "conversations.replies", func() (historyPage, error) {
			return c.history.replies(ctx, channel, thread, oldest, threadLookupLimit)
		}
	}
	if err := c.pace.wait(ctx, adapters.PriorityOf(ctx), channel, op); err != nil {
		return "", false, err
	}
	page, err := read()
	if thread != "" && slackCode(err) == "thread_not_found" {
		return "", false, nil // the post will fail permanently with the same code
	}
	if err != nil {
		return "", false, c.failed(channel, op, err)
	}
	ts, found, err := chunkIn(page.Messages, bot, key)
	if err != nil {
		return "", false, c.failed(channel, op, err)
	}
	return ts, found, nil
}

// chunkFields are what chunkIn reads of a message: its author, its ts
// and its metadata's event type and key, as slack-go reads them.
type chunkFields struct {
	User     string `json:"user"`
	TS       string `json:"ts"`
	Metadata struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	} `json:"metadata"`
}

// chunkIn finds, among page's messages, the bot's whose metadata carries
// key, and returns its ts. It reads of each message only chunkFields, so
// a block or a field of a shape slack-go cannot decode costs nothing. A
// message whose author is readable and not the bot cannot be the chunk,
// whatever else it holds. One whose author cannot be read, or the bot's
// whose ts or metadata cannot be read, might be the chunk: it fails the
// lookup rather than have the chunk posted twice.
func chunkIn(page []json.RawMessage, bot, key string) (string, bool, error) {
	for _, raw := range page {
		var m chunkFields
		err := json.Unmarshal(raw, &m)
		if err != nil {
			var author struct {
				User string `json:"user"`
			}
			if json.Unmarshal(raw, &author) == nil && author.User != bot {
				continue
			}
			return "", false, fmt.Errorf("read message %s, which may be the bot's: %w", tsForLog(raw), err)
		}
		if m.User == bot && m.Metadata.EventType == ChunkEventType && m.Metadata.EventPayload["key"] == key {
			return m.TS, true, nil
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
