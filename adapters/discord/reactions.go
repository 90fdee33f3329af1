package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// lifecycle is the order of the reaction states, for finding the bot's
// earlier ones.
var lifecycle = []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionThinking,
	pipeline.ReactionWaitingUser, pipeline.ReactionDone, pipeline.ReactionError}

// SetReaction shows a state on a user's message, in its thread or
// channel: it adds the state's emoji, then removes the bot's other
// lifecycle emoji there (Discord keeps each user's reactions side by
// side), so the message never shows none in between;
// pipeline.ReactionNone only removes. Adding what is there, or removing
// what is not, is a no-op on Discord, so a repeated change is harmless;
// and a message gone (10008 Unknown Message, or its channel with it,
// 10003) needs nothing more, so that counts as done.
//
// What to remove is read from the message (one GET, whose reactions say
// which are the bot's, "me"), never remembered: one message's states are
// set by several processes (the session's changes by the worker that
// runs its workflow task, the model step's ✍️ and the reply's ✅ by
// whichever worker took that activity, and the session itself moves when
// a worker stops or stalls), so what this process set last says nothing
// about what the message shows now, and trusting it left ✍️ or ✅
// behind. The GET is in the message bucket, not the reactions' (spaced
// by 200 ms per channel), so it costs less than deleting each other
// lifecycle emoji blindly would. ReactionReceived, the first state,
// reads nothing: nothing of the bot's is on a message before it, and
// should a late change have put something there, the clear that ends
// every lifecycle reads and removes it.
func (c *Client) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	channel, err := target(r.Session, r.ThreadID, opReact)
	if err != nil {
		return err
	}
	if r.MessageID == "" {
		return nil // not a message a user wrote (a button press): nothing to show
	}
	want := ""
	if r.State != pipeline.ReactionNone {
		want = c.emoji[r.State]
	}
	var shown []string
	if r.State != pipeline.ReactionReceived {
		shown, err = c.botEmoji(ctx, channel, r.MessageID)
	}
	if err == nil && want != "" && !slices.ContainsFunc(shown, func(e string) bool { return sameEmoji(e, want) }) {
		err = c.react(ctx, http.MethodPut, channel, r.MessageID, want)
	}
	for _, old := range shown {
		if err == nil && !sameEmoji(old, want) {
			err = c.react(ctx, http.MethodDelete, channel, r.MessageID, old)
		}
	}
	if code := codeOf(err); code == codeUnknownMessage || code == codeUnknownChannel {
		return nil
	}
	return err
}

// botEmoji are the lifecycle emoji the bot has on the message now, as
// configured, in lifecycle order.
func (c *Client) botEmoji(ctx context.Context, channel, messageID string) ([]string, error) {
	var m discordgo.Message
	err := c.call(ctx, request{op: opGetMessage, method: http.MethodGet, url: discordgo.EndpointChannelMessage(channel, messageID),
		bucket: discordgo.EndpointChannelMessage(channel, ""), wait: true}, &m)
	if err != nil {
		return nil, err
	}
	var shown []string
	for _, s := range lifecycle {
		e := c.emoji[s]
		if e == "" || slices.ContainsFunc(shown, func(x string) bool { return sameEmoji(x, e) }) {
			continue
		}
		for _, r := range m.Reactions {
			if r != nil && r.Me && r.Emoji != nil && sameEmoji(r.Emoji.APIName(), e) {
				shown = append(shown, e)
				break
			}
		}
	}
	return shown, nil
}

// reactionEvery spaces the bot's reaction calls in a channel, adds and
// removes together: Discord allows about one every 250 ms there
// (discordgo's own bucket spaces them by only 200 ms), and the calls
// leave here a little apart from when they reach Discord.
const reactionEvery = 300 * time.Millisecond

// react puts (adds) or deletes the bot's reaction emoji on a message.
// The emoji is escaped as a path segment (discordgo escapes only "#",
// as in #️⃣); reactions share discordgo's per-channel bucket, which
// spaces them by 200 ms.
func (c *Client) react(ctx context.Context, method, channel, messageID, emoji string) error {
	op := opReact
	if method == http.MethodDelete {
		op = opUnreact
	}
	return c.call(ctx, request{op: op, method: method,
		url:    discordgo.EndpointMessageReaction(channel, messageID, url.PathEscape(emoji), "@me"),
		bucket: discordgo.EndpointMessageReaction(channel, "", "", ""), wait: true,
		channel: channel, priority: max(adapters.PriorityOf(ctx), adapters.PriorityProgress), every: reactionEvery, pace: "reactions"}, nil)
}

// sameEmoji compares emoji as Discord may spell them, with or without
// the variation selector U+FE0F.
func sameEmoji(a, b string) bool {
	strip := func(s string) string { return strings.ReplaceAll(s, "\uFE0F", "") }
	return strip(a) == strip(b)
}

// ValidEmoji accepts a reaction as Discord takes it: a Unicode emoji
// (not plain text: Slack's "eyes" is no emoji here), or a custom emoji
// as name:id, for REPLYFLOW_DISCORD_REACTIONS.
func ValidEmoji(e string) error {
	if name, id, custom := strings.Cut(e, ":"); custom {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil || name == "" {
			return fmt.Errorf("%q is not a custom emoji as name:id (like party:112233445566778899)", e)
		}
		return nil
	}
	if e == "" || len(e) > 64 || strings.IndexFunc(e, unicode.IsSpace) >= 0 ||
		strings.IndexFunc(e, func(r rune) bool { return r > unicode.MaxASCII }) < 0 {
		return fmt.Errorf("%q is not an emoji (use the character itself, like ✅, or name:id of a custom one)", e)
	}
	return nil
}
