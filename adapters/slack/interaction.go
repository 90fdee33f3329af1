package slack

import (
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/pipeline"
)

// NormalizeInteraction turns a button press (a block_actions payload,
// from the interactivity URL or a Socket Mode interactive envelope) into
// an Inbound whose Action is the button's value ("approve:p1"), in the
// session and thread of the message that carried the button, which is
// its ReplyTo. Other interactions (modals, shortcuts) are skipped.
func NormalizeInteraction(mode ReplyMode, cb slack.InteractionCallback, now time.Time) Event {
	if cb.Type != slack.InteractionTypeBlockActions {
		return Event{Skip: "interaction type not handled (" + string(cb.Type) + ")"}
	}
	if len(cb.ActionCallback.BlockActions) == 0 {
		return Event{Skip: "block_actions without an action"}
	}
	action := cb.ActionCallback.BlockActions[0]
	if action.Value == "" {
		return Event{Skip: "a press on a control without a value"}
	}
	channel := firstOf(cb.Channel.ID, cb.Container.ChannelID)
	messageTS := firstOf(cb.Container.MessageTs, cb.Message.Timestamp)
	threadTS := firstOf(cb.Container.ThreadTs, cb.Message.ThreadTimestamp)
	if channel == "" || messageTS == "" {
		return Event{Skip: "a press on something that is not a channel's message"}
	}
	channelType := ChannelPublic
	if strings.HasPrefix(channel, "D") {
		channelType = ChannelIM
	}
	in := pipeline.Inbound{
		Channel:  Channel,
		Account:  firstOf(cb.Team.ID, cb.User.TeamID),
		ChatID:   channel,
		ChatType: pipeline.ChatGroup,
		// A press has no ts of its own; its action_ts is unique per press,
		// and a redelivery of the same press keeps it.
		MessageID:  "press-" + firstOf(action.ActionTs, cb.ActionTs) + "-" + cb.User.ID,
		SenderID:   cb.User.ID,
		SenderName: pipeline.ClipName(firstOf(cb.User.Name, cb.User.Profile.DisplayName)),
		ReplyTo:    messageTS,
		ReplyToBot: true,
		Action:     action.Value,
		ThreadID:   Place(channelType, messageTS, threadTS, mode).ThreadID,
		ReceivedAt: now.UTC(),
	}
	if channelType == ChannelIM {
		in.ChatType = pipeline.ChatDirect
	}
	if err := in.Validate(); err != nil {
		return Event{Skip: "invalid button press: " + err.Error()}
	}
	return Event{Inbound: &in}
}
