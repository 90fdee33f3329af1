package slack_test

import (
	"context"
	"slices"
	"testing"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// One message's lifecycle goes through several processes: the session's
// reactions through the worker running its workflow task, the model
// step's ✍️ and the delivery's ✅ through whichever worker took the
// activity. Whichever client sets a state, the message ends with that
// state's reaction alone, and with none after the clear.
func TestReactionsThroughTwoWorkersEndWithTheRightOneAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []string // "a:state" or "b:state", in order
	}{
		{"the model step on the other worker", []string{"a:received", "b:thinking", "a:done", "a:none"}},
		{"the delivery on the other worker", []string{"a:received", "a:thinking", "b:done", "a:none"}},
		{"the session moved", []string{"a:received", "a:thinking", "b:waiting_user", "a:done", "b:none"}},
		{"a fast turn", []string{"a:received", "b:done", "a:none"}},
		{"an error", []string{"b:received", "a:thinking", "b:error", "a:none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := outboundFake(t)
			workers := map[string]adapters.Outbound{"a": outboundClient(t, fake), "b": outboundClient(t, fake)}
			msg, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
			for _, step := range tc.steps {
				worker, state := step[:1], pipeline.ReactionState(step[2:])
				if state == "none" {
					state = pipeline.ReactionNone
				}
				change := pipeline.ReactionChange{Session: outboundSession("C1"), MessageID: msg.TS, ThreadID: msg.TS, State: state}
				if err := workers[worker].SetReaction(context.Background(), change); err != nil {
					t.Fatalf("%s: SetReaction: %v", step, err)
				}
				var want []string
				if state != pipeline.ReactionNone {
					want = []string{shortcodeOf(state)}
				}
				if got := fake.Reactions("C1", msg.TS); !slices.Equal(got, want) {
					t.Fatalf("after %s the bot's reactions are %v, want %v", step, got, want)
				}
			}
		})
	}
}

func shortcodeOf(state pipeline.ReactionState) string {
	return map[pipeline.ReactionState]string{
		pipeline.ReactionReceived: "eyes", pipeline.ReactionThinking: "writing_hand", pipeline.ReactionWaitingUser: "hourglass_flowing_sand",
		pipeline.ReactionDone: "white_check_mark", pipeline.ReactionError: "x",
	}[state]
}

// A reactions.add that Slack did not do (429, 5xx, no answer) fails the
// change, classified as any call, so the activity tries it again; Slack's
// already_reacted is done. The retry after a 429 waits out its
// Retry-After (one second here) in the channel's budget first.
func TestReactionAddThatFailedIsReturned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault slacktest.Fault
		kind  adapters.ErrorKind
	}{
		{"429", slacktest.RateLimited(1), adapters.RateLimited},
		{"503", slacktest.ServerError(), adapters.Transient},
		{"hung up", slacktest.Fault{Hangup: true}, adapters.Transient},
		{"internal_error", slacktest.SlackError("internal_error"), adapters.Transient},
		{"invalid_name", slacktest.SlackError("invalid_name"), adapters.Permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := outboundFake(t)
			c := outboundClient(t, fake)
			msg, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
			change := pipeline.ReactionChange{Session: outboundSession("C1"), MessageID: msg.TS, State: pipeline.ReactionDone}
			fake.FailNext("reactions.add", 1, tc.fault)
			err := c.SetReaction(context.Background(), change)
			if kind, _ := adapters.Classify(err); err == nil || kind != tc.kind {
				t.Fatalf("SetReaction whose reactions.add got %s = %v (kind %v), want a %v error", tc.name, err, kind, tc.kind)
			}
			if err := c.SetReaction(context.Background(), change); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if got := fake.Reactions("C1", msg.TS); !slices.Equal(got, []string{"white_check_mark"}) {
				t.Errorf("after the retry the bot's reactions are %v, want [white_check_mark]", got)
			}
		})
	}
}

// An app without reactions:read cannot read the message's reactions:
// the change removes every other lifecycle shortcode instead, and still
// leaves none behind.
func TestReactionsWithoutReadScopeStillEndWithTheRightOneAlone(t *testing.T) {
	fake := outboundFake(t)
	a, b := outboundClient(t, fake), outboundClient(t, fake)
	msg, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	change := func(state pipeline.ReactionState) pipeline.ReactionChange {
		return pipeline.ReactionChange{Session: outboundSession("C1"), MessageID: msg.TS, State: state}
	}
	fake.FailNext("reactions.get", 3, slacktest.SlackError("missing_scope"))
	for _, step := range []struct {
		c     *slack.Client
		state pipeline.ReactionState
		want  []string
	}{
		{a, pipeline.ReactionReceived, []string{"eyes"}},
		{b, pipeline.ReactionThinking, []string{"writing_hand"}},
		{a, pipeline.ReactionDone, []string{"white_check_mark"}},
		{a, pipeline.ReactionNone, nil},
	} {
		if err := step.c.SetReaction(context.Background(), change(step.state)); err != nil {
			t.Fatalf("SetReaction(%q) without reactions:read: %v", step.state, err)
		}
		if got := fake.Reactions("C1", msg.TS); !slices.Equal(got, step.want) {
			t.Fatalf("after %q the bot's reactions are %v, want %v", step.state, got, step.want)
		}
	}
}
