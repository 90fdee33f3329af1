package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// A Deliver whose message was created but whose answer was lost (a 500
// after the send, then a connection closed without an answer) is retried
// by the activity's policy; Discord answers the retry, which carries the
// same nonce with enforce_nonce, with the message it already created.
func TestDiscordDeliverRetriedAfterALostAnswerPostsNothingNew(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ChunkLimit = 40
	s := startDiscordStack(t, cfg)
	s.startWorker(answerModel(longAnswer))
	var want []string
	for _, c := range pipeline.Chunk(longAnswer, cfg.ChunkLimit) {
		want = append(want, discord.Render(c))
	}
	require.GreaterOrEqual(t, len(want), 2, "a reply in several chunks")
	channel := s.newChannel()
	// Chunk 1's first send is made and answered 500; chunk 2's is made
	// and hung up on.
	lost, hungUp := discordtest.AnswerLost(), discordtest.HungUp()
	lost.When = func(c discordtest.Call) bool { return c.Body["content"] == want[0] }
	hungUp.When = func(c discordtest.Call) bool { return c.Body["content"] == want[1] }
	s.fake.FailNext(discordtest.RouteSend, 1, lost)
	s.fake.FailNext(discordtest.RouteSend, 1, hungUp)

	post := s.mention(channel, discordAlice, "tell me a long story")
	s.waitCleared(channel, post.ID)
	assert.NotContains(t, s.reactionsOn(channel, post.ID), "+❌", "no delivery failed for good")

	sent := s.fake.Sent(channel)
	require.Equal(t, want, contents(sent), "every chunk once, in order")
	sends := s.fake.Calls(discordtest.RouteSend)
	require.Len(t, sends, len(want)+2, "one send per chunk, and one retry for each lost answer")
	assert.Equal(t, http.StatusInternalServerError, sends[0].Status)
	assert.Equal(t, 0, sends[2].Status, "hung up")
	for i, pair := range [][2]int{{0, 1}, {2, 3}} {
		first, retry := sends[pair[0]], sends[pair[1]]
		assert.Equal(t, want[i], first.Body["content"], "the lost answer was chunk %d's", i+1)
		assert.Equal(t, http.StatusOK, retry.Status)
		assert.Equal(t, first.Raw, retry.Raw, "chunk %d's retry is the same send", i+1)
		assert.NotEmpty(t, first.Body["nonce"])
		assert.Equal(t, true, first.Body["enforce_nonce"])
	}

	snap := s.stateOf(s.key(channel))
	assert.Equal(t, 1, snap.TurnSeq)
	var recorded, ids []string
	for _, d := range snap.Deliveries {
		recorded = append(recorded, d.PlatformMessageID)
	}
	for _, m := range sent {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, ids, recorded, "the session recorded the messages whose answers were lost")
}
