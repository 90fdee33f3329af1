package slack_test

import (
	"context"
	"testing"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestAnEditOfADeletedMessageSaysItIsGone(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	ctx := context.Background()
	ts, err := c.Send(ctx, pipeline.Delivery{Session: outboundSession("D1"), IdempotencyKey: "k", Text: "a preview", Total: 2})
	if err != nil {
		t.Fatal(err)
	}
	fake.Delete("D1", ts)
	err = c.Edit(ctx, pipeline.Edit{Session: outboundSession("D1"), PlatformMessageID: ts, Text: "the answer"})
	if !adapters.MessageGone(err) {
		t.Errorf("Edit of a deleted message: %v, want it gone", err)
	}
	if kind, _ := adapters.Classify(err); kind != adapters.Permanent {
		t.Errorf("Edit of a deleted message: %v, want Permanent", err)
	}

	// A message that is there but not the bot's is refused, not gone.
	user, _ := fake.AddMessage(slacktest.Post{Channel: "D1", User: "U0ALICE", Text: "hi"})
	err = c.Edit(ctx, pipeline.Edit{Session: outboundSession("D1"), PlatformMessageID: user.TS, Text: "x"})
	if err == nil || adapters.MessageGone(err) {
		t.Errorf("Edit of a user's message: %v, want refused and not gone", err)
	}
}
