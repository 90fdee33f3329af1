package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/pipeline"
)

// lifecycle is the order of the reaction states, for finding the bot's
// earlier ones.
var lifecycle = []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionThinking,
	pipeline.ReactionWaitingUser, pipeline.ReactionDone, pipeline.ReactionError}

// SetReaction shows a state on a user's message, in its thread or
// channel: it adds the state's emoji, then removes the one the bot set
// there before (Discord keeps each user's reactions side by side), so
// the message never shows none in between; pipeline.ReactionNone only
// removes. Adding what is there, or removing what is not, is a no-op on
// Discord, so a repeated change is harmless; and a message gone (10008
// Unknown Message, or its channel with it, 10003) needs nothing more, so
// that counts as done.
//
// What the bot set is remembered per message in a bounded map (10,000
// messages, oldest forgotten first). When the map does not know the
// message (another worker, a restart, evicted), one GET of the message
// tells which lifecycle emoji the bot has on it ("me"), except for
// ReactionReceived, the first state, which has nothing before it. A
// change that failed forgets the message: its add may have gone through.
func (c *Client) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	channel, err := target(r.Session, r.ThreadID, opReact)
	if err != nil {
		return err
	}
	if r.MessageID == "" {
		return nil // not a message a user wrote (a button press): nothing to show
	}
	key := channel + "/" + r.MessageID
	want := ""
	if r.State != pipeline.ReactionNone {
		want = c.emoji[r.State]
	}
	stale, err := c.staleReactions(ctx, channel, r.MessageID, key, r.State, want)
	if err == nil && want != "" {
		err = c.react(ctx, http.MethodPut, channel, r.MessageID, want)
	}
	for _, old := range stale {
		if err == nil {
			err = c.react(ctx, http.MethodDelete, channel, r.MessageID, old)
		}
	}
	switch code := codeOf(err); {
	case code == codeUnknownMessage || code == codeUnknownChannel:
		c.reactions.Remove(key)
		return nil
	case err != nil:
		// The add may have gone through before a removal failed (or the
		// answer was lost): what the bot has on the message is unknown
		// now, so the next change reads it instead of trusting the map.
		c.reactions.Remove(key)
		return err
	}
	c.reactions.Put(key, want)
	return nil
}

// staleReactions are the bot's lifecycle emoji on the message other than
// want.
func (c *Client) staleReactions(ctx context.Context, channel, messageID, key string, state pipeline.ReactionState, want string) ([]string, error) {
	if old, known := c.reactions.Get(key); known {
		if old == "" || old == want {
			return nil, nil
		}
		return []string{old}, nil
	}
	if state == pipeline.ReactionReceived {
		return nil, nil
	}
	var m discordgo.Message
	err := c.call(ctx, request{op: opGetMessage, method: http.MethodGet, url: discordgo.EndpointChannelMessage(channel, messageID),
		bucket: discordgo.EndpointChannelMessage(channel, ""), wait: true}, &m)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, s := range lifecycle {
		e := c.emoji[s]
		if e == "" || sameEmoji(e, want) || slices.ContainsFunc(stale, func(x string) bool { return sameEmoji(x, e) }) {
			continue
		}
		for _, r := range m.Reactions {
			if r != nil && r.Me && r.Emoji != nil && sameEmoji(r.Emoji.APIName(), e) {
				stale = append(stale, e)
				break
			}
		}
	}
	return stale, nil
}

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
		bucket: discordgo.EndpointMessageReaction(channel, "", "", ""), wait: true}, nil)
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
