package discord

import (
	"context"
	"testing"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAnEditOfADeletedMessageSaysItIsGone(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	id, err := c.Send(ctx, pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "k", Text: "a preview", Total: 2})
	if err != nil {
		t.Fatal(err)
	}
	fake.Delete(outGeneral, id)
	err = c.Edit(ctx, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "the answer"})
	if !adapters.MessageGone(err) {
		t.Errorf("Edit of a deleted message: %v, want it gone", err)
	}
	if kind, _ := outKind(err); kind != adapters.Permanent {
		t.Errorf("Edit of a deleted message: %v, want Permanent", err)
	}

	// A channel that is gone is not a message that is gone: a new
	// message could not go there either.
	err = c.Edit(ctx, pipeline.Edit{Session: outSession("100000000000000999"), PlatformMessageID: id, Text: "x"})
	if err == nil || adapters.MessageGone(err) {
		t.Errorf("Edit in an unknown channel: %v, want refused and not gone", err)
	}
}
