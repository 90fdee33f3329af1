package slack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlace(t *testing.T) {
	const (
		ts     = "1700000002.000200"
		parent = "1700000001.000100"
	)
	cases := []struct {
		name, channelType, threadTS string
		mode                        ReplyMode
		want                        string
	}{
		{"channel top-level starts a thread", ChannelPublic, "", ReplyThreaded, ts},
		{"channel top-level, always", ChannelPublic, "", ReplyAlways, ts},
		{"channel thread reply stays in the thread", ChannelPublic, parent, ReplyThreaded, parent},
		{"private channel top-level starts a thread", ChannelPrivate, "", ReplyThreaded, ts},
		{"private channel thread reply", ChannelPrivate, parent, ReplyAlways, parent},
		{"DM top-level answered top-level", ChannelIM, "", ReplyThreaded, ""},
		{"DM top-level, always, in a thread", ChannelIM, "", ReplyAlways, ts},
		{"DM thread reply in its thread", ChannelIM, parent, ReplyThreaded, parent},
		{"DM thread reply, always", ChannelIM, parent, ReplyAlways, parent},
		{"group DM top-level starts a thread", ChannelMPIM, "", ReplyThreaded, ts},
		{"group DM thread reply", ChannelMPIM, parent, ReplyThreaded, parent},
		{"unknown type is threaded like a channel", "", "", ReplyThreaded, ts},
		// A thread's parent carries thread_ts = its own ts.
		{"thread parent", ChannelPublic, ts, ReplyThreaded, ts},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Place(c.channelType, ts, c.threadTS, c.mode)
			assert.Equal(t, c.want, got.ThreadID)
			assert.Equal(t, got.ThreadID, got.ReplyThreadTS, "the reply must go where the lane is")
		})
	}
}

func TestParseReplyMode(t *testing.T) {
	for in, want := range map[string]ReplyMode{"": ReplyThreaded, "threaded": ReplyThreaded, "always": ReplyAlways} {
		got, err := ParseReplyMode(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseReplyMode("never")
	assert.ErrorContains(t, err, "REPLYFLOW_SLACK_REPLY_IN_THREAD")
}
