package discord

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestReactionLifecycle(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	msg := fake.Post(discordtest.Post{Channel: outThread, Author: outAda, Content: "hello"})
	for _, step := range []struct {
		state pipeline.ReactionState
		want  string
	}{
		{pipeline.ReactionReceived, "👀"},
		{pipeline.ReactionReceived, "👀"}, // repeated: a no-op
		{pipeline.ReactionThinking, "✍️"},
		{pipeline.ReactionWaitingUser, "⏳"},
		{pipeline.ReactionDone, "✅"},
		{pipeline.ReactionNone, ""},
		{pipeline.ReactionNone, ""},
		{pipeline.ReactionError, "❌"},
	} {
		err := c.SetReaction(ctx, pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: msg.ID, ThreadID: outThread, State: step.state})
		if err != nil {
			t.Fatalf("SetReaction(%q): %v", step.state, err)
		}
		got := fake.Reactions(outThread, msg.ID)
		if (step.want == "" && len(got) != 0) || (step.want != "" && !slices.Equal(got, []string{step.want})) {
			t.Fatalf("after %q the bot's reactions are %q, want [%s]", step.state, got, step.want)
		}
	}
	// Each change but received read the message once: what is on it is
	// Discord's to say, whatever this client set before.
	if calls := fake.Calls(discordtest.RouteGetMessage); len(calls) != 6 {
		t.Errorf("%d message reads, want 6 (one per change after received)", len(calls))
	}
	// The emoji went escaped in the path and arrived as configured.
	lifecycleEmoji := slices.Collect(maps.Values(pipeline.DefaultEmoji))
	for _, call := range fake.Calls(discordtest.RouteReact, discordtest.RouteUnreact) {
		if call.Vars["channel"] != outThread || !slices.Contains(lifecycleEmoji, call.Vars["emoji"]) {
			t.Errorf("reaction call %s %v, want a lifecycle emoji in the thread", call.Path, call.Vars)
		}
	}
}

// A worker that did not set the reaction (restarted, or another one)
// reads the message and replaces the bot's lifecycle reactions.
func TestReactionReplacedByAnotherWorker(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	ctx := context.Background()
	msg := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "hello"})
	change := func(state pipeline.ReactionState) pipeline.ReactionChange {
		return pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: msg.ID, State: state}
	}
	if err := outClient(t, fake, ClientConfig{}).SetReaction(ctx, change(pipeline.ReactionThinking)); err != nil {
		t.Fatal(err)
	}
	fake.React(outGeneral, msg.ID, outAda, "✅") // ada's ✅ is not the bot's
	if err := outClient(t, fake, ClientConfig{}).SetReaction(ctx, change(pipeline.ReactionDone)); err != nil {
		t.Fatal(err)
	}
	if got := fake.Reactions(outGeneral, msg.ID); !slices.Equal(got, []string{"✅"}) {
		t.Errorf("bot's reactions = %q, want [✅]", got)
	}
	if err := outClient(t, fake, ClientConfig{}).SetReaction(ctx, change(pipeline.ReactionNone)); err != nil {
		t.Fatal(err)
	}
	if got := fake.Reactions(outGeneral, msg.ID); len(got) != 0 {
		t.Errorf("bot's reactions after the clear = %q, want none", got)
	}
	if reads := fake.Calls(discordtest.RouteGetMessage); len(reads) != 3 {
		t.Errorf("%d message reads, want one per change", len(reads))
	}
	// The first state has nothing before it: no read.
	other := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "again"})
	if err := outClient(t, fake, ClientConfig{}).SetReaction(ctx, pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: other.ID, State: pipeline.ReactionReceived}); err != nil {
		t.Fatal(err)
	}
	if reads := fake.Calls(discordtest.RouteGetMessage); len(reads) != 3 {
		t.Errorf("%d message reads, want none for received", len(reads)-3)
	}
}

// A message deleted since counts as done, whether this worker knew its
// reaction or not.
func TestReactionOnADeletedMessageIsDone(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	ctx := context.Background()
	msg := fake.Post(discordtest.Post{Channel: outGeneral, Author: outAda, Content: "hello"})
	c := outClient(t, fake, ClientConfig{})
	change := pipeline.ReactionChange{Session: outSession(outGeneral), MessageID: msg.ID, State: pipeline.ReactionReceived}
	if err := c.SetReaction(ctx, change); err != nil {
		t.Fatal(err)
	}
	fake.Delete(outGeneral, msg.ID)
	for _, state := range []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone} {
		change.State = state
		if err := c.SetReaction(ctx, change); err != nil {
			t.Errorf("SetReaction(%q) on a deleted message: %v, want done", state, err)
		}
		if err := outClient(t, fake, ClientConfig{}).SetReaction(ctx, change); err != nil {
			t.Errorf("SetReaction(%q) on a deleted message by another worker: %v, want done", state, err)
		}
	}
	if calls := fake.Calls(discordtest.RouteReact, discordtest.RouteUnreact, discordtest.RouteGetMessage); calls[len(calls)-1].Code != 10008 {
		t.Errorf("last call %+v, want Discord's 10008", calls[len(calls)-1])
	}
	// A button press names no user message: nothing to show.
	if err := c.SetReaction(ctx, pipeline.ReactionChange{Session: outSession(outGeneral), State: pipeline.ReactionDone}); err != nil {
		t.Errorf("SetReaction without a message: %v", err)
	}
}

// Overrides: a custom emoji as name:id, and a Unicode one whose "#" must
// be escaped in the path.
func TestReactionOverrides(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	ctx := context.Background()
	msg := fake.Post(discordtest.Post{Channel: outDM, Author: outAda, Content: "hello"})
	c := outClient(t, fake, ClientConfig{Emoji: map[pipeline.ReactionState]string{
		pipeline.ReactionReceived: "#️⃣", pipeline.ReactionDone: "party:112233445566778899"}})
	for _, step := range []struct {
		state pipeline.ReactionState
		want  string
	}{{pipeline.ReactionReceived, "#️⃣"}, {pipeline.ReactionThinking, "✍️"}, {pipeline.ReactionDone, "party:112233445566778899"}} {
		if err := c.SetReaction(ctx, pipeline.ReactionChange{Session: outSession(outDM), MessageID: msg.ID, State: step.state}); err != nil {
			t.Fatalf("SetReaction(%q): %v", step.state, err)
		}
		if got := fake.Reactions(outDM, msg.ID); !slices.Equal(got, []string{step.want}) {
			t.Errorf("after %q: %q, want [%s]", step.state, got, step.want)
		}
	}
}

func TestValidEmoji(t *testing.T) {
	for e, ok := range map[string]bool{
		"✅": true, "✍️": true, "#️⃣": true, "party:112233445566778899": true,
		"": false, "eyes": false, ":eyes:": false, "party:abc": false, ":1": false, "✅ ✅": false,
	} {
		if err := ValidEmoji(e); (err == nil) != ok {
			t.Errorf("ValidEmoji(%q) = %v, want ok %v", e, err, ok)
		}
	}
}
