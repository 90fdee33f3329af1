package slack

import "fmt"

// ReplyMode is REPLYFLOW_SLACK_REPLY_IN_THREAD: where replies to direct
// messages go. In channels replies always go in a thread.
type ReplyMode string

const (
	// ReplyThreaded answers a top-level direct message top-level, and a
	// threaded one in its thread. The default.
	ReplyThreaded ReplyMode = "threaded"
	// ReplyAlways answers every direct message in a thread, starting one
	// under a top-level message.
	ReplyAlways ReplyMode = "always"
)

// ParseReplyMode reads the setting; empty is ReplyThreaded.
func ParseReplyMode(s string) (ReplyMode, error) {
	switch ReplyMode(s) {
	case "", ReplyThreaded:
		return ReplyThreaded, nil
	case ReplyAlways:
		return ReplyAlways, nil
	}
	return "", fmt.Errorf("REPLYFLOW_SLACK_REPLY_IN_THREAD is %q; use %q or %q", s, ReplyAlways, ReplyThreaded)
}

// Slack's conversation types, as events' channel_type gives them.
const (
	ChannelPublic  = "channel"
	ChannelPrivate = "group"
	ChannelIM      = "im"
	ChannelMPIM    = "mpim"
)

// isDirect is true for one-to-one direct messages: there people talk
// top-level, as in any chat. Group DMs thread like channels: several
// people talk there, and their app_mention events carry no channel type,
// so both twins of a post must place it the same way without it.
func isDirect(channelType string) bool { return channelType == ChannelIM }

// Placement is where a message sits and where its reply goes.
type Placement struct {
	// ThreadID is the Inbound's ThreadID: the session's lane.
	ThreadID string
	// ReplyThreadTS is chat.postMessage's thread_ts for the reply; empty
	// posts top-level.
	ReplyThreadTS string
}

// Place computes both halves of a message's Placement from one value, so
// they cannot disagree: the lane of a message is the Slack thread its
// reply is posted in, and the client posts a Delivery with thread_ts =
// its ThreadID. A reply therefore never leaves its thread, and messages
// of one Slack thread share one lane.
//
// In a channel, a group DM or a conversation of unknown type, the reply
// goes in the message's thread: thread_ts, else its own ts, which starts
// a thread under it. In a direct message, a threaded message is answered
// in its thread, and a top-level one top-level (ReplyThreaded, the root
// lane) or in a thread under it (ReplyAlways).
func Place(channelType, ts, threadTS string, mode ReplyMode) Placement {
	var thread string
	switch {
	case threadTS != "":
		thread = threadTS
	case isDirect(channelType) && mode != ReplyAlways:
		thread = ""
	default:
		thread = ts
	}
	return Placement{ThreadID: thread, ReplyThreadTS: thread}
}
