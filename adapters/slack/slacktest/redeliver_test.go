package slacktest_test

import (
	"testing"

	"github.com/slack-go/slack/socketmode"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

func TestRedeliverSendsAnAckedEnvelopeAgainAsARetry(t *testing.T) {
	fake, _ := start(t)
	if fake.Redeliver("env-404") {
		t.Error("Redeliver of an unknown envelope reported true")
	}
	ctx, client := runSocket(t, fake)
	next(t, ctx, client, socketmode.EventTypeHello)
	id := fake.SendEvent(slacktest.ReactionAdded("U1", "eyes", "C1", "1.000001"))
	first := next(t, ctx, client, socketmode.EventTypeEventsAPI)
	if err := client.Ack(*first.Request); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitFor(ctx, func() bool { return fake.Acked(id) }); err != nil {
		t.Fatal(err)
	}

	if !fake.Redeliver(id) {
		t.Fatal("Redeliver of a sent envelope reported false")
	}
	again := next(t, ctx, client, socketmode.EventTypeEventsAPI)
	if again.Request.EnvelopeID != id || again.Request.RetryAttempt != 1 || again.Request.RetryReason != "timeout" {
		t.Fatalf("redelivered %+v, want %s as retry 1 for timeout", again.Request, id)
	}
	if string(again.Request.Payload) != string(first.Request.Payload) {
		t.Errorf("payload changed on redelivery:\n%s\nthen\n%s", first.Request.Payload, again.Request.Payload)
	}
	if err := client.Ack(*again.Request); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitFor(ctx, func() bool { return len(fake.Acks()) == 2 }); err != nil {
		t.Fatalf("acks = %+v: %v", fake.Acks(), err)
	}
	if env := fake.Envelopes(); len(env) != 1 || env[0].RetryAttempt != 1 {
		t.Errorf("envelopes = %+v, want one, sent twice", env)
	}
}
