package slack

import (
	"context"
	"slices"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// lifecycle is the order of the reaction states, for finding the bot's
// earlier ones.
var lifecycle = []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionThinking,
	pipeline.ReactionWaitingUser, pipeline.ReactionDone, pipeline.ReactionError}

// SetReaction shows a state on a user's message: it adds the state's
// shortcode, then removes the bot's other lifecycle shortcodes there
// (ReactionNone only removes). Slack keeps reactions per user and adds
// rather than replaces, hence the removal; adding first means the
// message never shows none in between. already_reacted and no_reaction
// count as done, so a repeated change is harmless; a message gone
// (message_not_found) needs nothing more.
//
// What to remove is read from Slack (reactions.get), never remembered:
// one message's states are set by several processes (the session's
// changes by the worker that runs its workflow task, the model step's
// ✍️ and the reply's ✅ by whichever worker took that activity, and the
// session itself moves when a worker stops or stalls), so what this
// process set last says nothing about what the message shows now, and
// trusting it left ✍️ or ✅ behind. The read costs one call per change
// (Tier 3, beside reactions.remove's Tier 2) and saves the removals of
// shortcodes that are not there. ReactionReceived, the first state,
// reads nothing: nothing of the bot's is on a message before it, and
// should a late change have put something there, the clear that ends
// every lifecycle reads and removes it.
func (c *Client) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	channel, err := channelOf(r.Session, "reactions.add")
	if err != nil {
		return err
	}
	if r.MessageID == "" {
		return nil // not a message a user wrote (a button press): nothing to show
	}
	item := slack.NewRefToMessage(channel, r.MessageID)
	want := ""
	if r.State != pipeline.ReactionNone {
		want = c.shortcodes[r.State]
	}
	var shown []string
	if r.State != pipeline.ReactionReceived {
		var gone bool
		shown, gone, err = c.botShortcodes(ctx, item, want)
		if err != nil || gone {
			return err
		}
	}
	if want != "" && !slices.Contains(shown, want) {
		if err := c.pace.wait(ctx, reacting(ctx), channel, "reactions.add"); err != nil {
			return err
		}
		err := c.api.AddReactionContext(ctx, want, item)
		switch code := slackCode(err); {
		case err == nil, code == "already_reacted":
		case code == "message_not_found":
			return nil // the message is gone, and its reaction with it
		default:
			return c.failed(channel, "reactions.add", err)
		}
	}
	for _, old := range shown {
		if old == want {
			continue
		}
		if err := c.pace.wait(ctx, reacting(ctx), channel, "reactions.remove"); err != nil {
			return err
		}
		err := c.api.RemoveReactionContext(ctx, old, item)
		switch code := slackCode(err); {
		case err == nil, code == "no_reaction":
		case code == "message_not_found":
			return nil
		default:
			return c.failed(channel, "reactions.remove", err)
		}
	}
	return nil
}

// reacting is the priority of a reaction's calls: behind finals.
func reacting(ctx context.Context) adapters.Priority {
	return max(adapters.PriorityOf(ctx), adapters.PriorityProgress)
}

// botShortcodes are the lifecycle shortcodes the bot has on the message
// now, in lifecycle order; gone reports a message that no longer exists.
// Without the scope to read, they are every lifecycle shortcode but want.
func (c *Client) botShortcodes(ctx context.Context, item slack.ItemRef, want string) (shown []string, gone bool, err error) {
	const op = "reactions.get"
	bot, err := c.botUser(ctx)
	if err != nil {
		return nil, false, err
	}
	// full: without it Slack may cut a reaction's list of users short,
	// and the bot's name could be the one left out.
	if err := c.pace.wait(ctx, reacting(ctx), item.Channel, op); err != nil {
		return nil, false, err
	}
	got, err := c.api.GetReactionsContext(ctx, item, slack.GetReactionsParameters{Full: true})
	switch code := slackCode(err); {
	case err == nil:
	case code == "message_not_found":
		return nil, true, nil
	case code == "missing_scope":
		// An app installed without reactions:read cannot read; removing
		// every other lifecycle shortcode blindly (no_reaction is done)
		// still leaves none behind, at up to four calls a change.
		if !c.readScopeWarned.Swap(true) {
			c.logger.Warn("Slack refused reactions.get (missing scope); each reaction change removes every other lifecycle reaction blindly instead: add reactions:read to the Slack app and reinstall it",
				"channel", item.Channel)
		}
		for _, s := range lifecycle {
			if name := c.shortcodes[s]; name != "" && name != want && !slices.Contains(shown, name) {
				shown = append(shown, name)
			}
		}
		return shown, false, nil
	default:
		return nil, false, c.failed(item.Channel, op, err)
	}
	for _, s := range lifecycle {
		name := c.shortcodes[s]
		if name == "" || slices.Contains(shown, name) {
			continue
		}
		for _, r := range got.Reactions {
			if r.Name == name && slices.Contains(r.Users, bot) {
				shown = append(shown, name)
				break
			}
		}
	}
	return shown, false, nil
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
	if c.pace.wait(ctx, adapters.PriorityPreview, channel, op) != nil {
		return nil // typing is shown only when the channel has room to spare
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
	return c.failed(channel, op, err)
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
	if c.pace.wait(ctx, adapters.PriorityPreview, channel, "assistant.threads.setStatus") != nil {
		return // Slack clears it itself as the bot posts in the thread
	}
	err := c.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: threadID, Status: ""})
	if err != nil {
		c.logger.Debug("Could not clear the typing status", "session", session.WorkflowID(), "error", err)
	}
}
