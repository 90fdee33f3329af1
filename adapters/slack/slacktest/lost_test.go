package slacktest_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// A lost answer: the post is made, the client gets an error, and the
// fake records one call (Go's transport does not resend the POST).
func TestLostAnswersPostAndFail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  slacktest.Fault
		status int // recorded
		posted bool
	}{
		{"503 after the post", slacktest.AnswerLost(), http.StatusServiceUnavailable, true},
		{"hung up after the post", slacktest.HungUp(), 0, true},
		{"hung up before the post", slacktest.Fault{Hangup: true}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, api := start(t)
			// A first call opens a connection that the next one reuses, as
			// a worker's client does.
			if _, err := api.AuthTest(); err != nil {
				t.Fatal(err)
			}
			fake.FailNext("chat.postMessage", 1, tc.fault)
			_, _, err := api.PostMessage("C1", slack.MsgOptionText("hello", false))
			var slackErr slack.SlackErrorResponse
			if err == nil || errors.As(err, &slackErr) {
				t.Errorf("post: err = %v, want a failure that is not Slack's ok:false", err)
			}
			if sent := fake.Sent("C1"); (len(sent) == 1) != tc.posted || len(sent) > 1 {
				t.Errorf("sent = %+v, want posted %v (once)", sent, tc.posted)
			}
			calls := fake.Calls("chat.postMessage")
			if len(calls) != 1 || calls[0].Status != tc.status {
				t.Errorf("calls = %+v, want one with status %d", calls, tc.status)
			}
			if _, _, err := api.PostMessage("C1", slack.MsgOptionText("again", false)); err != nil {
				t.Errorf("the next post: %v, want it served", err)
			}
		})
	}
}
