package slacktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// runSocket starts slack-go's Socket Mode client against the fake; it
// stops with the test.
func runSocket(t *testing.T, fake *slacktest.Server, opts ...socketmode.Option) (context.Context, *socketmode.Client) {
	t.Helper()
	api := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken(fake.AppToken))
	client := socketmode.New(api, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = client.RunContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ctx, client
}

// next is the client's next event of the type, skipping others.
func next(t *testing.T, ctx context.Context, client *socketmode.Client, typ socketmode.EventType) socketmode.Event {
	t.Helper()
	for {
		select {
		case evt := <-client.Events:
			if evt.Type == typ {
				return evt
			}
		case <-ctx.Done():
			t.Fatalf("no %s event from the socket: %v", typ, ctx.Err())
		}
	}
}

func TestSocketModeHelloEventsAndAcks(t *testing.T) {
	fake, _ := start(t)
	ctx, client := runSocket(t, fake)
	next(t, ctx, client, socketmode.EventTypeHello)

	_, events := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi <@" + fake.BotUserID + ">"})
	if len(events) != 2 {
		t.Fatalf("events of a mention = %v, want the message and its app_mention twin", events)
	}
	var ids []string
	for _, e := range events {
		ids = append(ids, fake.SendEvent(e))
	}
	for i, want := range []string{"message", "app_mention"} {
		evt := next(t, ctx, client, socketmode.EventTypeEventsAPI)
		outer := evt.Data.(slackevents.EventsAPIEvent)
		if evt.Request.EnvelopeID != ids[i] || evt.Request.RetryAttempt != 0 || outer.InnerEvent.Type != want {
			t.Errorf("envelope %d = %+v (inner %s), want %s, first attempt", i, evt.Request, outer.InnerEvent.Type, want)
		}
		if err := client.Ack(*evt.Request); err != nil {
			t.Fatal(err)
		}
	}
	if err := fake.WaitFor(ctx, func() bool { return fake.Acked(ids[0]) && fake.Acked(ids[1]) }); err != nil {
		t.Fatalf("acks = %+v: %v", fake.Acks(), err)
	}
}

func TestSocketModeRedeliversAnUnackedEnvelope(t *testing.T) {
	fake, _ := start(t)
	ctx, client := runSocket(t, fake)
	m, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	id := fake.SendEvent(slacktest.ReactionAdded("U1", "thumbsup", "C1", m.TS))

	first := next(t, ctx, client, socketmode.EventTypeEventsAPI) // left unacked
	again := next(t, ctx, client, socketmode.EventTypeEventsAPI)
	if first.Request.EnvelopeID != id || again.Request.EnvelopeID != id || again.Request.RetryAttempt != 1 || again.Request.RetryReason != "timeout" {
		t.Fatalf("deliveries %+v then %+v, want %s again as retry 1 for timeout", first.Request, again.Request, id)
	}
	if inner, ok := again.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.ReactionAddedEvent); !ok || inner.Item.Timestamp != m.TS {
		t.Errorf("inner event = %+v, want the reaction on %s", again.Data, m.TS)
	}
	if err := client.Ack(*again.Request); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitFor(ctx, func() bool { return fake.Acked(id) }); err != nil {
		t.Fatal(err)
	}
	if env := fake.Envelopes(); len(env) != 1 || env[0].RetryAttempt != 1 {
		t.Errorf("envelopes = %+v, want one, sent twice", env)
	}
}

func TestSocketModeInteractiveWithResponsePayload(t *testing.T) {
	fake, _ := start(t)
	ctx, client := runSocket(t, fake)
	id := fake.SendInteractive(fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U1", MessageTS: "1.000001", ActionID: "stop", Value: "s1"}))
	evt := next(t, ctx, client, socketmode.EventTypeInteractive)
	cb := evt.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) != 1 || cb.ActionCallback.BlockActions[0].ActionID != "stop" || !evt.Request.AcceptsResponsePayload {
		t.Fatalf("interactive = %+v, want the block action, accepting a response payload", cb)
	}
	if err := client.Ack(*evt.Request, map[string]string{"text": "stopped"}); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitFor(ctx, func() bool { return fake.Acked(id) }); err != nil {
		t.Fatal(err)
	}
	if acks := fake.Acks(); string(acks[0].Payload) != `{"text":"stopped"}` {
		t.Errorf("ack payload = %s, want the response", acks[0].Payload)
	}
}

func TestSocketModeReconnectsOnDisconnect(t *testing.T) {
	fake, _ := start(t)
	ctx, client := runSocket(t, fake)
	next(t, ctx, client, socketmode.EventTypeHello)
	fake.Disconnect("refresh_requested")
	// slack-go reconnects on disconnect without passing it on as an event.
	next(t, ctx, client, socketmode.EventTypeHello)
	if n := len(fake.Calls("apps.connections.open")); n != 2 || fake.Opened() != 2 {
		t.Errorf("apps.connections.open called %d times, %d sockets opened; want a second of each", n, fake.Opened())
	}
}

func TestSocketModeRedeliversOnTheNextSocketAfterADrop(t *testing.T) {
	fake, _ := start(t)
	ctx, client := runSocket(t, fake)
	id := fake.SendEvent(slacktest.ReactionAdded("U1", "eyes", "C1", "1.000001"))
	next(t, ctx, client, socketmode.EventTypeEventsAPI) // lost with the socket
	fake.DropConnections()
	if err := fake.WaitFor(ctx, func() bool { return fake.Opened() == 2 }); err != nil {
		t.Fatalf("the client never reconnected: %v", err)
	}
	evt := next(t, ctx, client, socketmode.EventTypeEventsAPI)
	if evt.Request.EnvelopeID != id || evt.Request.RetryAttempt != 1 {
		t.Fatalf("after the drop got %+v, want %s as retry 1", evt.Request, id)
	}
	if err := client.Ack(*evt.Request); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitFor(ctx, func() bool { return fake.Acked(id) }); err != nil {
		t.Fatal(err)
	}
}

func TestSocketModeSilenceTripsTheClientsHealthCheck(t *testing.T) {
	fake, _ := start(t)
	ctx, client := runSocket(t, fake, socketmode.OptionPingInterval(500*time.Millisecond))
	next(t, ctx, client, socketmode.EventTypeHello)
	fake.Silence(true)
	if err := fake.WaitFor(ctx, func() bool { return fake.Opened() >= 2 }); err != nil {
		t.Fatalf("the client never reconnected after the pings stopped: %v", err)
	}
	fake.Silence(false)
	next(t, ctx, client, socketmode.EventTypeHello)
	// An envelope sent now reaches the new socket.
	id := fake.SendEvent(slacktest.ReactionAdded("U1", "eyes", "C1", "1.000001"))
	evt := next(t, ctx, client, socketmode.EventTypeEventsAPI)
	if evt.Request.EnvelopeID != id {
		t.Errorf("envelope %s arrived, want %s", evt.Request.EnvelopeID, id)
	}
}

func TestAppsConnectionsOpenWantsTheAppToken(t *testing.T) {
	fake, _ := start(t)
	withBot := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken(fake.BotToken))
	if _, _, err := withBot.StartSocketModeContext(context.Background()); err == nil || err.Error() != "not_allowed_token_type" {
		t.Errorf("apps.connections.open with the bot token: err = %v, want not_allowed_token_type", err)
	}
	withApp := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()), slack.OptionAppLevelToken(fake.AppToken))
	_, url, err := withApp.StartSocketModeContext(context.Background())
	if err != nil || len(url) < 5 || url[:5] != "ws://" {
		t.Errorf("apps.connections.open = %q, %v; want a ws:// URL", url, err)
	}
}
