package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// sseEvent is one event read from the web chat's stream.
type sseEvent struct {
	Type      string
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Emoji     string `json:"emoji"`
	ReplyTo   string `json:"reply_to"`
	// File is a document sent with the message (/export).
	File *fileEvent `json:"file"`
	// Buttons are a message's buttons (a proposal's Approve and Reject).
	Buttons []pipeline.Button `json:"buttons"`
}

type eventStream struct{ ch chan sseEvent }

// subscribe opens the chat's event stream and returns once it is
// connected, so no event that follows can be missed.
func subscribe(t *testing.T, baseURL, chat string) *eventStream {
	return subscribeAs(t, baseURL, chat, func(*http.Request) {})
}

// subscribeAs is subscribe with the request signed in by signIn (a
// cookie, a Bearer token).
func subscribeAs(t *testing.T, baseURL, chat string, signIn func(*http.Request)) *eventStream {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/chats/"+chat+"/events", nil)
	require.NoError(t, err)
	signIn(req)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &eventStream{ch: make(chan sseEvent, 100)}
	go func() {
		defer resp.Body.Close()
		defer close(s.ch)
		scanner := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for scanner.Scan() {
			line := scanner.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = sseEvent{Type: strings.TrimPrefix(line, "event: ")}
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("event %s has undecodable data %q: %v", ev.Type, line, err)
				}
			case line == "" && ev.Type != "":
				s.ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return s
}

// collectUntil gathers events until last returns true for one, failing the
// test if that has not happened by the deadline.
func (s *eventStream) collectUntil(t *testing.T, within time.Duration, last func(sseEvent) bool) []sseEvent {
	t.Helper()
	deadline := time.After(within)
	var seen []sseEvent
	for {
		select {
		case ev, open := <-s.ch:
			require.True(t, open, "the event stream closed; saw %v", seen)
			seen = append(seen, ev)
			if last(ev) {
				return seen
			}
		case <-deadline:
			t.Fatalf("no final event within %s; saw %+v", within, seen)
		}
	}
}

func isReaction(messageID, emoji string) func(sseEvent) bool {
	return func(ev sseEvent) bool { return ev.Type == "reaction" && ev.MessageID == messageID && ev.Emoji == emoji }
}

func isReplyTo(messageID string) func(sseEvent) bool {
	return func(ev sseEvent) bool { return ev.Type == "message" && ev.ReplyTo == messageID }
}

func types(events []sseEvent) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.Type)
	}
	return out
}

// allSeen is true once each of wanted has been true for some event,
// in any order.
func allSeen(wanted ...func(sseEvent) bool) func(sseEvent) bool {
	seen := make([]bool, len(wanted))
	return func(ev sseEvent) bool {
		all := true
		for i, w := range wanted {
			seen[i] = seen[i] || w(ev)
			all = all && seen[i]
		}
		return all
	}
}

func isClearOf(messageID string) func(sseEvent) bool {
	return func(ev sseEvent) bool { return ev.Type == "reaction" && ev.MessageID == messageID && ev.Emoji == "" }
}

// summarize renders reactions on messageID and bot messages (their first
// line), skipping typing events, which depend on timing.
func summarize(events []sseEvent, messageID string) []string {
	var out []string
	for _, ev := range events {
		switch {
		case ev.Type == "reaction" && ev.MessageID == messageID:
			out = append(out, "reaction "+messageID+" "+ev.Emoji)
		case ev.Type == "message":
			first, _, _ := strings.Cut(ev.Text, "\n")
			out = append(out, "message "+first)
		}
	}
	return out
}

func countMessages(events []sseEvent) int {
	n := 0
	for _, ev := range events {
		if ev.Type == "message" {
			n++
		}
	}
	return n
}

func listRequest(query string) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query}
}

// recordHistory saves every run of the web chat session's history for the
// replay test when the tests run with -record-histories (make
// record-histories).
func recordHistory(t *testing.T, c client.Client, chat, name string) {
	recordHistoryOf(t, c, pipeline.SessionKey{Channel: "webchat", Chat: chat}, name)
}

// historySeries names the workflow code a recording run records, the
// release of the chat session workflow (workflows.Releases). Each release
// records its paths under the code of its time, in a folder of its own
// (workflows/session/testdata/histories/<release>/); a new release bumps
// this and runs make record-histories.
const historySeries = "chat-2026-11"

// recordHistoryOf saves every run of the session's history as
// <release>/<name>_run<N>.json.gz. A history already recorded under that
// name is kept as it is: it guards sessions that ran the workflow code of
// its time, so it is never re-recorded (a new path gets a new name). The
// histories recorded before the first change are in baseline/.
func recordHistoryOf(t *testing.T, c client.Client, key pipeline.SessionKey, name string) {
	if *recordTo == "" {
		return
	}
	recorded, err := harness.RecordHistory(context.Background(), c, key.WorkflowID(), filepath.Join(*recordTo, historySeries), name)
	require.NoError(t, err)
	if !recorded {
		t.Logf("history %s/%s is recorded already; kept as it is", historySeries, name)
	}
}

// receiveWithin waits for ch to deliver (or close), failing the test with
// what after 30 s.
func receiveWithin[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal(what)
	}
}
