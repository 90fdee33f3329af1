package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// An edited message reaches the gateway as a new update with the same
// message ID: the session's dedupe drops it, so the edit starts no second
// turn (the adapter's own test only checks that the ID is kept).
func TestTelegramEditedMessageIsDroppedByTheSessionsDedupe(t *testing.T) {
	s := startTelegramStack(t, testConfig(t))
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "helo"})
	waitFor(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	s.fake.AddEdit(chat.ID, asked, "hello")
	waitFor(t, s.fake, "the edit confirmed", func() bool { return s.fake.Pending() == 0 })

	require.Eventually(t, func() bool { return s.stateOf(tgKey(chat)).Counters.Duplicates == 1 }, time.Minute, 50*time.Millisecond,
		"the session counts the edit as a duplicate")
	snap := s.stateOf(tgKey(chat))
	assert.Equal(t, 1, snap.Counters.Inbound)
	assert.Equal(t, 1, snap.TurnSeq, "the edit started no turn")
	assert.Len(t, s.fake.Sent(chat.ID), 1)
}
