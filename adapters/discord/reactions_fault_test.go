package discord

import (
	"context"
	"slices"
	"testing"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// A change whose emoji was added but whose removal of the one before
// failed (a 500, or the turn's context ending between the two calls, as
// when a fast model's activity returns while it shows ✍️) leaves both on
// the message. The next change must remove both, not only what the
// client remembered from before: the lifecycle still ends with none.
func TestReactionAddedButOldOneNotRemovedIsClearedLater(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	msg := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "hello"})
	set := func(state pipeline.ReactionState) error {
		return c.SetReaction(ctx, pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: msg.ID, State: state})
	}
	if err := set(pipeline.ReactionReceived); err != nil {
		t.Fatal(err)
	}
	fake.FailNext(discordtest.RouteUnreact, 1, discordtest.ServerError())
	if err := set(pipeline.ReactionThinking); err == nil {
		t.Fatal("SetReaction(thinking) whose removal of 👀 failed returned no error")
	}
	if got := fake.Reactions(outGeneral, msg.ID); !slices.Equal(got, []string{"👀", "✍️"}) {
		t.Fatalf("after the failed removal the bot's reactions are %q, want [👀 ✍️]", got)
	}
	if err := set(pipeline.ReactionDone); err != nil {
		t.Fatal(err)
	}
	if got := fake.Reactions(outGeneral, msg.ID); !slices.Equal(got, []string{"✅"}) {
		t.Errorf("after done the bot's reactions are %q, want [✅]", got)
	}
	if err := set(pipeline.ReactionNone); err != nil {
		t.Fatal(err)
	}
	if got := fake.Reactions(outGeneral, msg.ID); len(got) != 0 {
		t.Errorf("after the clear the bot's reactions are %q, want none", got)
	}
}
