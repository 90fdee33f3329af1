package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// lateAfter is REPLYFLOW_STALE_AFTER in the tests that wait for a message
// to become late on the platforms whose catch-up reads on from Temporal's
// clock (Slack, Discord), where the fake's clock cannot be set back.
const lateAfter = 4 * time.Second

// postedAt is when Slack says the post of ts was made.
func postedAt(t *testing.T, ts string) time.Time {
	sec, micro, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	require.NoError(t, err)
	u, err := strconv.ParseInt(micro, 10, 64)
	require.NoError(t, err)
	return time.Unix(s, u*1000)
}

// waitOlderThan waits until a message sent at sent is older than d (and
// than adapters.LateAfter), so that it reaches the gateway late.
func waitOlderThan(t *testing.T, sent time.Time, d time.Duration) {
	t.Helper()
	d = max(d, adapters.LateAfter) + 500*time.Millisecond
	require.Eventually(t, func() bool { return time.Since(sent) > d }, time.Minute, 50*time.Millisecond)
}

// Slack retries an event three times and then drops it. Here the gateway
// is away while two messages are posted: Slack gave up on the first, and
// its last retry of the second reaches the gateway that comes back, while
// the catch-up fetches both from the channel's history too. Each is
// answered once, in its thread, starting with the late note; the message
// sent live before is answered once, without one.
func TestSlackMessagesPostedWhileTheGatewayWasDownAreAnsweredOnceAndLateInBothModes(t *testing.T) {
	for _, mode := range slackModes {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.StaleAfter = lateAfter
			s := startSlackStackIn(t, cfg, mode)
			s.startWorker(&testModel{})
			channel := s.newSlackChannel()
			before, events := s.mention(channel, slackAlice, "", "before the outage")
			s.deliver(events[0])
			s.waitCleared(channel, before.TS)

			s.stopGateway()
			first, _ := s.mention(channel, slackAlice, "", "while you were away")
			second, secondEvents := s.mention(channel, slackBob, "", "and me too")
			waitOlderThan(t, postedAt(t, second.TS), lateAfter)

			s.restartGateway()
			s.waitSlackUp()
			s.deliver(secondEvents[0]) // Slack's last retry of it
			s.waitCleared(channel, first.TS, second.TS)

			replies := s.botReplies(channel, before.TS)
			require.Len(t, replies, 1, "the message before answered once")
			assert.Equal(t, "You said: before the outage", firstLine(replies[0].Text), "a live message's reply has no note")
			for _, c := range []struct {
				post slacktest.Message
				said string
			}{{first, "while you were away"}, {second, "and me too"}} {
				replies := s.botReplies(channel, c.post.TS)
				require.Len(t, replies, 1, "answered once, in its thread: %q", c.said)
				require.Regexp(t, lateNote, replies[0].Text)
				assert.Equal(t, "You said: "+c.said, firstLine(lateNote.ReplaceAllString(replies[0].Text, "")))
			}
			assert.Len(t, s.fake.Sent(channel), 3)
			snap := s.stateOf(s.key(channel))
			assert.Equal(t, 3, snap.TurnSeq)
			assert.Equal(t, 3, snap.Counters.Inbound)
			assert.GreaterOrEqual(t, snap.Counters.Duplicates, 1, "the retry and the catch-up both brought the second")
		})
	}
}

// A conversation whose session ended (idle past its TTL) still has its
// cursor in Temporal: the closed run's last message. A message posted
// there while no gateway ran, which Slack gave up on, is fetched by the
// gateway that starts and answered once in a new session; the message
// the closed session answered is not fetched again (a new session would
// answer it twice).
func TestSlackMessagePostedWhileTheGatewayWasDownAfterTheSessionEndedIsAnsweredOnceInBothModes(t *testing.T) {
	for _, mode := range slackModes {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.SessionIdleTTL = time.Second
			s := startSlackStackIn(t, cfg, mode)
			s.startWorker(&testModel{})
			channel := s.newSlackChannel()
			before, events := s.mention(channel, slackAlice, "", "before the outage")
			s.deliver(events[0])
			s.waitCleared(channel, before.TS)
			id := s.key(channel).WorkflowID()
			require.Eventually(t, func() bool {
				d, err := s.client.DescribeWorkflowExecution(context.Background(), id, "")
				return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
			}, time.Minute, 100*time.Millisecond, "the session ended, idle past its TTL")

			s.stopGateway()
			missed, _ := s.mention(channel, slackBob, "", "while you were away")

			s.restartGateway()
			s.waitSlackUp()
			s.waitCleared(channel, missed.TS)
			replies := s.botReplies(channel, missed.TS)
			require.Len(t, replies, 1, "answered once, in its thread")
			assert.Equal(t, "You said: while you were away", firstLine(replies[0].Text))
			assert.Len(t, s.botReplies(channel, before.TS), 1, "what the ended session answered is not answered again")
			assert.Len(t, s.fake.Sent(channel), 2)
			snap := s.stateOf(s.key(channel))
			assert.Equal(t, 1, snap.Counters.Inbound, "the new session took the missed message alone")
		})
	}
}
