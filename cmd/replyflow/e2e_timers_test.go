package main

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// A debounce window shorter than a second closes on time on the dev
// server `replyflow dev` starts (package devserver): its timer fires
// within 100 ms of its due time, not when the server's timer queue next
// reads ahead.
func TestShortTimersFireOnTimeOnTheDevServer(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Debounce = 300 * time.Millisecond
	s := startStack(t, cfg)
	s.startWorker(&testModel{})

	// Several sessions: a timer that happens to fall just before the
	// queue's next read is on time even with a late queue.
	const chats = 5
	var late []time.Duration
	for range chats {
		chat := uniqueChat("timers")
		events := subscribe(t, s.baseURL, chat)
		code, resp := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"hello"}`)
		require.Equal(t, http.StatusAccepted, code, resp)
		events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool { return ev.Type == "message" })

		history := s.history(pipeline.SessionKey{Channel: "webchat", Chat: chat})
		timers := harness.TimersLate(history)
		require.NotEmpty(t, timers, "the debounce window of %s is a timer that fired before the answer", chat)
		late = append(late, timers...)
	}
	slices.Sort(late)
	assert.LessOrEqual(t, late[len(late)-1], 100*time.Millisecond, "how late each timer fired: %v", late)
}

// history is the events of the session's current run so far.
func (s *stack) history(key pipeline.SessionKey) []*historypb.HistoryEvent {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var events []*historypb.HistoryEvent
	iter := s.client.GetWorkflowHistory(ctx, key.WorkflowID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(s.t, err, "read the history of %s", key.WorkflowID())
		events = append(events, ev)
	}
	return events
}
