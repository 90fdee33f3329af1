package telegram

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// idMap is an in-memory IDMap: session -> internal ID -> Telegram ID.
type idMap map[string]map[string]string

func (m idMap) PlatformID(_ context.Context, session, internal string) (string, bool, error) {
	if session == "broken" {
		return "", false, errors.New("store down")
	}
	id, ok := m[session][internal]
	return id, ok, nil
}

func TestAnchorResolvesInternalIDsThroughTheMap(t *testing.T) {
	key := pipeline.SessionKey{Channel: Channel, Account: "1000", Chat: "-100123"}
	internal := key.WorkflowID() + "/t3/0"
	c, err := NewClient(ClientConfig{Token: "1000:secret", Anchors: idMap{key.WorkflowID(): {internal: "41", "odd": "not-a-number"}}})
	require.NoError(t, err)
	ctx := context.Background()
	anchor := func(replyTo string, k pipeline.SessionKey) int {
		return c.anchor(ctx, pipeline.Delivery{Session: k, ReplyTo: replyTo})
	}
	assert.Equal(t, 17, anchor("17", key), "a Telegram message ID is used as it is")
	assert.Equal(t, 41, anchor(internal, key), "an internal ID resolves through the map")
	assert.Zero(t, anchor("session:x/t9/0", key), "no mapping: no anchor")
	assert.Zero(t, anchor("odd", key), "a mapping that is not a Telegram ID: no anchor")
	assert.Zero(t, anchor("", key), "nothing to anchor")
	assert.Zero(t, anchor(internal, pipeline.SessionKey{Channel: Channel, Chat: "broken"}), "a failing map: no anchor, no failure")

	unmapped, err := NewClient(ClientConfig{Token: "1000:secret"})
	require.NoError(t, err)
	assert.Zero(t, unmapped.anchor(ctx, pipeline.Delivery{Session: key, ReplyTo: internal}))
}

func TestTopicComesBackOnlyFromTopicThreads(t *testing.T) {
	n, ok := topicOf("topic-7")
	assert.True(t, ok)
	assert.Equal(t, 7, n)
	for _, id := range []string{"", "reply-7", "topic-", "topic-x", "topic--3", "7"} {
		_, ok := topicOf(id)
		assert.False(t, ok, id)
	}
}

func TestBotIDComesFromTheToken(t *testing.T) {
	id, err := BotID("123456789:AAE-secret")
	require.NoError(t, err)
	assert.Equal(t, int64(123456789), id)
	for _, bad := range []string{"", "abc:def", "123456789", "123:", "-5:x"} {
		_, err := BotID(bad)
		assert.Error(t, err, bad)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
