package discord

import (
	"context"
	"slices"
	"testing"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// One message's lifecycle goes through several processes: the session's
// reactions through the worker running its workflow task, the model
// step's ✍️ and the delivery's ✅ through whichever worker took the
// activity. Whichever client sets a state, the message ends with that
// state's emoji alone, and with none after the clear.
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
			fake := outFake(t, discordtest.Options{})
			workers := map[string]*Client{"a": outClient(t, fake, ClientConfig{}), "b": outClient(t, fake, ClientConfig{})}
			msg := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "hello"})
			for _, step := range tc.steps {
				worker, state := step[:1], pipeline.ReactionState(step[2:])
				if state == "none" {
					state = pipeline.ReactionNone
				}
				change := pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: msg.ID, State: state}
				if err := workers[worker].SetReaction(context.Background(), change); err != nil {
					t.Fatalf("%s: SetReaction: %v", step, err)
				}
				var want []string
				if state != pipeline.ReactionNone {
					want = []string{pipeline.DefaultEmoji[state]}
				}
				if got := fake.Reactions(outGeneral, msg.ID); !slices.Equal(got, want) {
					t.Fatalf("after %s the bot's reactions are %q, want %q", step, got, want)
				}
			}
		})
	}
}
