package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The web chat stamps a message when the gateway accepts it, so a web
// chat message is late only by waiting inside replyflow: here, queued
// behind a turn whose model holds its answer past REPLYFLOW_STALE_AFTER.
// The long turn's reply and the queued message's reply each start with
// the late note, on the event stream and in the chat's history; a message
// answered at once, before and after, has none.
func TestWebChatMessageQueuedBehindALongTurnIsAnsweredLate(t *testing.T) {
	cfg := testConfig(t)
	cfg.StaleAfter = lateAfter
	s := startStack(t, cfg)
	release := make(chan struct{})
	model := holding("the long one", release)
	s.startWorker(model)
	chat := uniqueChat("late")
	events := subscribe(t, s.baseURL, chat)
	post := func(id, text string) time.Time {
		t.Helper()
		at := time.Now()
		code, body := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":"alice","text":%q}`, id, text))
		require.Equal(t, http.StatusAccepted, code, body)
		return at
	}

	// Each step waits for the reply and the clear of ✅ both: a reply
	// that never comes fails the step with the events seen, rather than
	// the clear ending it early.
	post("w0", "answered at once")
	seen := events.collectUntil(t, 30*time.Second, allSeen(isReplyTo("w0"), isClearOf("w0")))
	fresh := repliesIn(seen)
	require.Len(t, fresh, 1, "saw %+v", seen)
	assert.Equal(t, "You said: answered at once", fresh["w0"], "a reply given at once has no note")

	post("w1", "the long one")
	model.waitStarted(t, "the long one")
	queued := post("w2", "queued meanwhile")
	require.Eventually(t, func() bool { return len(s.state(chat).Queued) == 1 }, 30*time.Second, 50*time.Millisecond,
		"w2 waits in the queue behind the long turn")
	waitOlderThan(t, queued, lateAfter)
	close(release)

	seen = events.collectUntil(t, 30*time.Second, allSeen(isReplyTo("w1"), isReplyTo("w2"), isClearOf("w2")))
	late := repliesIn(seen)
	require.Len(t, late, 2, "one reply each: %q; saw %+v", late, seen)
	for id, said := range map[string]string{"w1": "the long one", "w2": "queued meanwhile"} {
		require.Regexp(t, lateNote, late[id], "the reply to %s, answered %s or more after it was sent, says so", id, lateAfter)
		assert.Contains(t, firstLine(late[id]), "(replying to your message from ", "a direct chat: your message")
		assert.Equal(t, "You said: "+said, lateNote.ReplaceAllString(late[id], ""))
	}

	post("w3", "after the wait")
	seen = events.collectUntil(t, 30*time.Second, allSeen(isReplyTo("w3"), isClearOf("w3")))
	after := repliesIn(seen)
	require.Len(t, after, 1, "saw %+v", seen)
	assert.Equal(t, "You said: after the wait", after["w3"], "a reply given at once has no note, after late ones too")

	shown := s.webchatHistory(chat)
	require.Len(t, shown, 4, "the history shows each reply: %q", shown)
	assert.Regexp(t, lateNote, shown["w2"], "a page loaded later shows the note too")
	assert.Equal(t, "You said: after the wait", shown["w3"])
	snap := s.state(chat)
	assert.Equal(t, 4, snap.TurnSeq, "one turn a message")
}

// repliesIn is the text of each bot message among events, by the message
// it replies to.
func repliesIn(events []sseEvent) map[string]string {
	out := map[string]string{}
	for _, ev := range events {
		if ev.Type == "message" {
			out[ev.ReplyTo] = ev.Text
		}
	}
	return out
}

// webchatHistory is the text of each bot message GET
// /api/chats/{chat}/history shows, by the message it replies to.
func (s *stack) webchatHistory(chat string) map[string]string {
	s.t.Helper()
	resp, err := http.Get(s.baseURL + "/api/chats/" + chat + "/history")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	var body struct {
		Events []struct {
			Type string
			Data sseEvent
		}
	}
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&body))
	out := map[string]string{}
	for _, ev := range body.Events {
		if ev.Type == "message" {
			out[ev.Data.ReplyTo] = ev.Data.Text
		}
	}
	return out
}
