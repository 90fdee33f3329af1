package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// TestBurstsAcrossContinueAsNew: 20 sessions receive bursts at once; every
// burst becomes exactly one turn, every message is answered once, and every
// session continues as new on the way (the server suggests it after 60
// events) without losing or doubling anything.
func TestBurstsAcrossContinueAsNew(t *testing.T) {
	cfg := testConfig(t)
	// A burst is posted within the window: three posts, which under the
	// race detector with 20 chats posting at once have taken over 2 s.
	cfg.Debounce = 6 * time.Second
	// One sender posts 180 messages into 20 chats at once: a load, not a
	// person, and past the default limits of a sender's messages and new
	// sessions (REPLYFLOW_RATE_SENDER, REPLYFLOW_RATE_NEW_SESSIONS).
	cfg.RateSender, cfg.RateNewSessions = "off", "off"
	s := startStack(t, cfg)
	s.startWorker(nil)

	const sessions, bursts, perBurst = 20, 3, 3
	chats := make([]string, sessions)
	for n := range chats {
		chats[n] = uniqueChat("burst")
	}
	var wg sync.WaitGroup
	for _, chat := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			events := subscribe(t, s.baseURL, chat)
			var seen []sseEvent
			for b := range bursts {
				var texts []string
				for m := range perBurst {
					id := fmt.Sprintf("%s-b%d-m%d", chat, b, m)
					texts = append(texts, id)
					code, body := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":"alice","text":%q}`, id, id))
					if !assert.Equal(t, http.StatusAccepted, code, body) {
						return
					}
				}
				last := texts[len(texts)-1]
				got := events.collectUntil(t, time.Minute, isReplyTo(last))
				seen = append(seen, got...)
				reply := got[len(got)-1].Text
				assert.True(t, strings.HasPrefix(reply, "You said: "+strings.Join(texts, "\n")), "%s: burst %d is answered as one turn: %q", chat, b, reply)
			}
			lastID := fmt.Sprintf("%s-b%d-m%d", chat, bursts-1, perBurst-1)
			seen = append(seen, events.collectUntil(t, time.Minute, isClearOf(lastID))...)
			assert.Equal(t, bursts, countMessages(seen), "%s: one reply per burst, none doubled", chat)

			snap := s.state(chat)
			assert.Equal(t, bursts, snap.Counters.Turns, chat)
			assert.Equal(t, bursts*perBurst, snap.Counters.Inbound, chat)
			assert.Zero(t, snap.Counters.Duplicates, chat)
			assert.Greater(t, snap.Counters.Runs, 1, "%s continued as new", chat)
			assert.Equal(t, s.continuedRuns(chat), snap.Counters.Runs-1, chat)
		}()
	}
	wg.Wait()
	recordHistory(t, s.client, chats[0], "bursts")
}

func TestQueuedFollowupIsAnsweredAfterTheRunningTurn(t *testing.T) {
	s := startStack(t, testConfig(t))
	release := make(chan struct{})
	model := holding("slow one", release)
	s.startWorker(model)
	chat := uniqueChat("followup")
	events := subscribe(t, s.baseURL, chat)

	code, _ := s.post(chat, `{"message_id":"f1","sender_id":"alice","text":"slow one"}`)
	require.Equal(t, http.StatusAccepted, code)
	model.waitStarted(t, "slow one")
	code, _ = s.post(chat, `{"message_id":"f2","sender_id":"alice","text":"and then this"}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool { return len(s.state(chat).Queued) == 1 }, 30*time.Second, 50*time.Millisecond,
		"f2 waits in the queue once its debounce window closed")
	close(release)

	seen := events.collectUntil(t, 30*time.Second, isClearOf("f2"))
	var replies []string
	for _, ev := range seen {
		if ev.Type == "message" {
			replies = append(replies, ev.ReplyTo)
		}
	}
	assert.Equal(t, []string{"f1", "f2"}, replies, "one turn each, in order")
	recordHistory(t, s.client, chat, "followup")
}

func TestInterruptCancelsTheRunningTurn(t *testing.T) {
	s := startStack(t, testConfig(t))
	model := holding("long task", nil)
	s.startWorker(model)
	chat := uniqueChat("interrupt")
	events := subscribe(t, s.baseURL, chat)

	code, _ := s.post(chat, `{"message_id":"i0","sender_id":"alice","text":"/queue interrupt"}`)
	require.Equal(t, http.StatusAccepted, code)
	events.collectUntil(t, 30*time.Second, isReplyTo("i0"))
	code, _ = s.post(chat, `{"message_id":"i1","sender_id":"alice","text":"long task"}`)
	require.Equal(t, http.StatusAccepted, code)
	model.waitStarted(t, "long task")
	code, _ = s.post(chat, `{"message_id":"i2","sender_id":"alice","text":"forget it, do this"}`)
	require.Equal(t, http.StatusAccepted, code)

	seen := events.collectUntil(t, 30*time.Second, isReplyTo("i2"))
	assert.Equal(t, "You said: forget it, do this", firstLine(seen[len(seen)-1].Text))
	seen = append(seen, events.collectUntil(t, 30*time.Second, isClearOf("i1"))...)
	assert.Equal(t, 1, countMessages(seen), "the interrupted turn never replies")
	snap := s.state(chat)
	assert.Equal(t, 1, snap.Counters.Interrupted)
	recordHistory(t, s.client, chat, "interrupt")
}

// A /stop drops what was steered into the running turn with it: the
// steered message is never answered, its reaction is cleared, and what
// comes after the stop is answered on its own.
func TestStopDropsWhatWasSteeredIntoTheTurn(t *testing.T) {
	cfg := testConfig(t)
	cfg.QueueMode = "steer"
	s := startStack(t, cfg)
	model := holding("long task", nil)
	s.startWorker(model)
	chat := uniqueChat("stop-steered")
	events := subscribe(t, s.baseURL, chat)

	code, _ := s.post(chat, `{"message_id":"s1","sender_id":"alice","text":"long task"}`)
	require.Equal(t, http.StatusAccepted, code)
	model.waitStarted(t, "long task")
	code, _ = s.post(chat, `{"message_id":"s2","sender_id":"alice","text":"also this"}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool { return s.state(chat).Counters.Steered == 1 }, 30*time.Second, 50*time.Millisecond,
		"s2 is steered into the running turn once its debounce window closed")
	code, _ = s.post(chat, `{"message_id":"s3","sender_id":"alice","text":"/stop"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("s3"))
	assert.Equal(t, pipeline.AbortedReply, seen[len(seen)-1].Text)
	code, _ = s.post(chat, `{"message_id":"s4","sender_id":"alice","text":"after the stop"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen = append(seen, events.collectUntil(t, 30*time.Second, isClearOf("s4"))...)
	var replies []string
	for _, ev := range seen {
		if ev.Type == "message" {
			replies = append(replies, ev.ReplyTo)
		}
	}
	assert.Equal(t, []string{"s3", "s4"}, replies, "the stop is answered, then the message after it; the steered one never")
	var shown []string
	for _, ev := range seen {
		if ev.Type == "reaction" && ev.MessageID == "s2" {
			shown = append(shown, ev.Emoji)
		}
	}
	if len(shown) > 0 {
		assert.Empty(t, shown[len(shown)-1], "a reaction the steered message showed is cleared: %q", shown)
	}
	assert.Empty(t, s.state(chat).Queued, "nothing of it waits")
	recordHistory(t, s.client, chat, "stop_steered")
}

// holding is a model that holds its answer to text until until is closed
// (nil: until cancelled) and answers everything else at once.
func holding(text string, until <-chan struct{}) *testModel {
	answerNow := make(chan struct{})
	close(answerNow)
	return &testModel{started: make(chan string, 4), hold: func(got string) <-chan struct{} {
		if got == text {
			return until
		}
		return answerNow
	}}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// continuedRuns counts the session's runs that ended in continue-as-new.
func (s *stack) continuedRuns(chat string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()
	var n int
	require.Eventually(s.t, func() bool {
		resp, err := s.client.ListWorkflow(ctx, listRequest(fmt.Sprintf(`WorkflowId = %q AND ExecutionStatus = "ContinuedAsNew"`, id)))
		if err != nil {
			return false
		}
		n = len(resp.Executions)
		return n > 0
	}, 10*time.Second, 100*time.Millisecond, "visibility lists the continued runs of %s", id)
	return n
}
