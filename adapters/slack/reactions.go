package slack

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/pipeline"
)

// SetReaction shows a state on a user's message: it removes the
// shortcode the bot set there before and adds the state's (ReactionNone
// only removes). Slack keeps reactions per user and adds rather than
// replaces, hence the removal. already_reacted and no_reaction count as
// done, so a repeated change is harmless.
//
// What the bot set is remembered per message in a bounded map (10,000
// messages, oldest forgotten first) rather than read with reactions.get,
// which would cost a call per change (and slacktest lacks it). When the map does not know the message
// (another worker, a restart, evicted), every other lifecycle shortcode
// is removed, except for ReactionReceived, the first state, which has
// nothing before it.
func (c *Client) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	channel, err := channelOf(r.Session, "reactions.add")
	if err != nil {
		return err
	}
	if r.MessageID == "" {
		return nil // not a message a user wrote (a button press): nothing to show
	}
	item := slack.NewRefToMessage(channel, r.MessageID)
	key := messageKey(channel, r.MessageID)
	want := ""
	if r.State != pipeline.ReactionNone {
		want = c.shortcodes[r.State]
	}
	for _, old := range c.previousShortcodes(key, r.State, want) {
		err := c.api.RemoveReactionContext(ctx, old, item)
		if err != nil && slackCode(err) != "no_reaction" && slackCode(err) != "message_not_found" {
			return classify("reactions.remove", err)
		}
	}
	c.reactions.Remove(key)
	if want == "" {
		return nil
	}
	err = c.api.AddReactionContext(ctx, want, item)
	switch slackCode(err) {
	case "", "already_reacted":
	case "message_not_found":
		return nil // the message is gone, and its reaction with it
	default:
		return classify("reactions.add", err)
	}
	c.reactions.Put(key, want)
	return nil
}

// previousShortcodes are the shortcodes to remove before want is set.
func (c *Client) previousShortcodes(key string, state pipeline.ReactionState, want string) []string {
	if old, ok := c.reactions.Get(key); ok {
		if old == want {
			return nil
		}
		return []string{old}
	}
	if state == pipeline.ReactionReceived {
		return nil
	}
	var all []string
	for _, s := range []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionThinking, pipeline.ReactionWaitingUser, pipeline.ReactionDone, pipeline.ReactionError} {
		if name := c.shortcodes[s]; name != "" && name != want {
			all = append(all, name)
		}
	}
	return all
}

// Typing shows TypingStatus in the thread (assistant.threads.setStatus);
// Send clears it after a reply's last chunk. It is best effort: Slack
// shows a status only in threads, so the root lane of a DM gets none,
// and any ok:false answer (a workspace or app without the assistant
// feature, a missing scope) is logged at debug and not returned. Rate
// limits and Slack's outages are returned, classified, as for any call.
func (c *Client) Typing(ctx context.Context, session pipeline.SessionKey, threadID string) error {
	const op = "assistant.threads.setStatus"
	channel, err := channelOf(session, op)
	if err != nil || threadID == "" {
		return err
	}
	err = c.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: threadID, Status: TypingStatus})
	if err == nil {
		c.typing.Put(messageKey(channel, threadID), "")
		return nil
	}
	if code := slackCode(err); code != "" {
		// Whatever Slack refuses (no assistant feature, a missing scope,
		// a thread it does not know), the reply goes on without it.
		c.logger.Debug("Slack refused the typing status; going on without it", "session", session.WorkflowID(), "code", code)
		return nil
	}
	return classify(op, err)
}

// clearTyping empties the status Typing set in the thread, if any. Slack
// also clears it when the bot posts there; this covers the rest, and a
// failure only leaves a status that Slack drops by itself.
func (c *Client) clearTyping(ctx context.Context, session pipeline.SessionKey, channel, threadID string) {
	key := messageKey(channel, threadID)
	if _, shown := c.typing.Get(key); !shown || threadID == "" {
		return
	}
	c.typing.Remove(key)
	err := c.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: threadID, Status: ""})
	if err != nil {
		c.logger.Debug("Could not clear the typing status", "session", session.WorkflowID(), "error", err)
	}
}
