package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// These run each Slack path in both modes: what the session sees must not
// depend on whether Slack pushed the event over Socket Mode or POSTed it
// to the Events API URL.

// People in the Slack tests, as the fake workspace knows them.
const (
	slackAlice = "U0ALICE"
	slackBob   = "U0BOB"
)

func TestSlackMentionGoesThroughTheReactionLifecycleInBothModes(t *testing.T) {
	for _, mode := range slackModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := startSlackStackIn(t, testConfig(t), mode)
			release := make(chan struct{})
			s.startWorker(&testModel{hold: func(string) <-chan struct{} { return release }})
			channel := s.newSlackChannel()

			post, events := s.mention(channel, slackAlice, "", "hello there")
			for _, ev := range events {
				s.deliver(ev)
			}
			// The model answers only once ✍️ has replaced 👀 and the
			// typing status is shown, as a slow model would: the change
			// to ✍️ adds it, then removes 👀, and a model answering
			// between the two makes ✅ the state that replaces 👀.
			waitForSlack(t, s.fake, "✍️ in place of 👀 and the typing status in the thread", func() bool {
				on := s.fake.Reactions(channel, post.TS)
				return slices.Contains(on, "writing_hand") && !slices.Contains(on, "eyes") && len(s.fake.Statuses(channel, post.TS)) > 0
			})
			close(release)
			s.waitCleared(channel, post.TS)

			assert.Equal(t, []string{"+eyes", "+writing_hand", "-eyes", "+white_check_mark", "-writing_hand", "-white_check_mark"},
				s.reactionsOn(channel, post.TS), "👀 → ✍️ → ✅ → cleared, each state added before the one it replaces is removed")
			replies := s.botReplies(channel, post.TS)
			require.Len(t, replies, 1)
			assert.Equal(t, post.TS, replies[0].ThreadTS, "answered in the post's thread")
			assert.Equal(t, "You said: hello there", firstLine(replies[0].Text), "the mention stripped, the text whole")
			assert.Contains(t, replies[0].Text, mrkdwn.Render(pipeline.GroupNudge), "Alice speaks alone, but the channel's five members make it a group")
			statuses := s.fake.Statuses(channel, post.TS)
			assert.Empty(t, statuses[len(statuses)-1].Status, "the typing status is cleared after the reply")
			snap := s.stateOf(s.key(channel))
			assert.Equal(t, workflows.StatusIdle, snap.Status)
			assert.Equal(t, 1, snap.TurnSeq)
			assert.Empty(t, snap.Reactions, "no reaction is left behind")
			recordHistoryOf(t, s.client, s.key(channel), "slack_mention_"+mode)
		})
	}
}

// Slack delivers an event again when its ack (the envelope's, or the
// POST's 200) did not reach it in time, though the gateway accepted it.
// The copy comes after the answer here, so it is the session's ring of
// seen messages, not a debounce buffer, that drops it.
func TestSlackRedeliveredEventIsAnsweredOnceInBothModes(t *testing.T) {
	for _, mode := range slackModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := startSlackStackIn(t, testConfig(t), mode)
			s.startWorker(&testModel{})
			channel := s.newSlackChannel()

			post, events := s.mention(channel, slackAlice, "", "only once please")
			first := s.deliver(events[0])
			s.deliver(events[1]) // the app_mention twin
			waitForSlack(t, s.fake, "the answer in the thread", func() bool { return len(s.botReplies(channel, post.TS)) > 0 })
			s.redeliver(first)

			require.Eventually(t, func() bool { return s.stateOf(s.key(channel)).Counters.Duplicates == 2 }, 30*time.Second, 50*time.Millisecond,
				"the twin and the redelivery are dropped by the session's dedupe")
			s.waitCleared(channel, post.TS)
			snap := s.stateOf(s.key(channel))
			assert.Equal(t, 1, snap.Counters.Inbound, "three deliveries of one post are one message")
			assert.Equal(t, 1, snap.TurnSeq)
			replies := s.botReplies(channel, post.TS)
			require.Len(t, replies, 1, "one answer")
			assert.Equal(t, "You said: only once please", firstLine(replies[0].Text))
			assert.Len(t, s.fake.Sent(channel), 1, "and nothing else posted")
		})
	}
}

// The Slack twin of TestTelegramTwoUsersInOneTopicInsideTheDebounceWindowGetTwoTurns:
// debounce merges one sender's messages in one lane, never two senders'.
func TestSlackTwoUsersInOneThreadInsideTheDebounceWindowGetTwoTurnsInBothModes(t *testing.T) {
	for _, mode := range slackModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Debounce = 3 * time.Second
			s := startSlackStackIn(t, cfg, mode)
			s.startWorker(&testModel{})
			channel := s.newSlackChannel()

			start := time.Now()
			fromAlice, events := s.mention(channel, slackAlice, "", "from alice")
			for _, ev := range events {
				s.deliver(ev)
			}
			fromBob, events := s.mention(channel, slackBob, fromAlice.TS, "from bob") // in Alice's thread
			for _, ev := range events {
				s.deliver(ev)
			}
			// Temporal held Bob's post before Alice's debounce timer could
			// fire; a machine too slow for that would test nothing.
			require.Less(t, time.Since(start), cfg.Debounce, "Bob's post came after Alice's debounce window")
			s.waitCleared(channel, fromAlice.TS, fromBob.TS)

			replies := s.botReplies(channel, fromAlice.TS)
			require.Len(t, replies, 2, "one answer each, not one merged turn: %+v", replies)
			var texts []string
			for _, m := range replies {
				assert.Equal(t, fromAlice.TS, m.ThreadTS, "both answered in the one thread")
				// A second speaker turns the group-chat note on, which the
				// test model echoes below the answer.
				texts = append(texts, firstLine(m.Text))
			}
			assert.ElementsMatch(t, []string{"You said: from alice", "You said: from bob"}, texts)
			snap := s.stateOf(s.key(channel))
			assert.Equal(t, 2, snap.TurnSeq)
			assert.Equal(t, 2, snap.Counters.Inbound)
			assert.Equal(t, 2, snap.Counters.Duplicates, "each post's app_mention twin")
			recordHistoryOf(t, s.client, s.key(channel), "slack_two_users_"+mode)
		})
	}
}
