package discord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func TestButtonsBecomeActionRows(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	var buttons []pipeline.Button
	for i := range 7 {
		buttons = append(buttons, pipeline.Button{Text: fmt.Sprintf("Option %d", i), Action: fmt.Sprintf("pick:%d", i)})
	}
	id, err := c.Send(context.Background(), pipeline.Delivery{Session: outSession(outDM), IdempotencyKey: "k", Text: "Pick one", Buttons: buttons, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message(outDM, id)
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
			Style    int    `json:"style"`
		} `json:"components"`
	}
	if err := discordgo.Unmarshal(m.Components, &rows); err != nil || len(rows) != 2 || len(rows[0].Components) != 5 || len(rows[1].Components) != 2 {
		t.Fatalf("components %s, want a row of 5 and a row of 2", m.Components)
	}
	if len(m.Buttons) != 7 || m.Buttons[6].CustomID != "pick:6" || m.Buttons[6].Style != int(discordgo.SecondaryButton) {
		t.Errorf("buttons %+v, want 7 grey ones with their actions as custom_id", m.Buttons)
	}

	// What Discord would refuse is refused here, without a call.
	calls := len(fake.Calls())
	for name, bad := range map[string][]pipeline.Button{
		"an action of 101 characters": {{Text: "Yes", Action: "approve:" + strings.Repeat("p", 93)}},
		"an empty action":             {{Text: "Yes"}},
		"26 buttons":                  make([]pipeline.Button, 26),
	} {
		_, err := c.Send(context.Background(), pipeline.Delivery{Session: outSession(outDM), IdempotencyKey: name, Text: "x", Buttons: bad, Total: 1})
		if kind, _ := outKind(err); kind != adapters.Permanent {
			t.Errorf("%s: %v, want Permanent", name, err)
		}
	}
	if len(fake.Calls()) != calls {
		t.Errorf("refused buttons made %d calls", len(fake.Calls())-calls)
	}
	// 100 characters is allowed.
	ok := []pipeline.Button{{Text: strings.Repeat("L", 90), Action: "approve:" + strings.Repeat("p", 92)}}
	if _, err := c.Send(context.Background(), pipeline.Delivery{Session: outSession(outDM), IdempotencyKey: "100", Text: "x", Buttons: ok, Total: 1}); err != nil {
		t.Errorf("an action of 100 characters and a long label: %v", err)
	}
}

// outPress posts a proposal and has ada press Approve on it; answer makes
// the gateway's deferred update, after which the interaction's webhook
// exists.
func outPress(t *testing.T, fake *discordtest.Server, c *Client) (proposal string, it discordtest.Interaction, answer func()) {
	t.Helper()
	buttons := []pipeline.Button{{Text: "Approve", Action: "approve:p1"}, {Text: "Reject", Action: "reject:p1"}}
	proposal, err := c.Send(context.Background(), pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "proposal", Text: "Run it?", Buttons: buttons, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	it = fake.Press(discordtest.Press{Channel: outGeneral, Message: proposal, User: outAda, CustomID: "approve:p1"})
	return proposal, it, func() {
		dg, err := discordgo.New("Bot " + fake.Token)
		if err != nil {
			t.Fatal(err)
		}
		dg.Client = fake.Client()
		if err := dg.InteractionRespond(&discordgo.Interaction{ID: it.ID, Token: it.Token},
			&discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); err != nil {
			t.Error(err)
		}
	}
}

func outRefusal(proposal, token string) pipeline.Delivery {
	return pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "notice-1", ReplyTo: proposal,
		Text: "⚠️ only an owner may decide", Total: 1, PrivateTo: outAda, PrivateVia: token}
}

// A refusal with the press's token is shown to the presser alone.
func TestPrivateReplyIsAnEphemeralFollowUp(t *testing.T) {
	fake := outFake(t, discordtest.Options{ApplicationID: "700000000000000007"})
	c := outClient(t, fake, ClientConfig{ApplicationID: "700000000000000007"})
	proposal, it, answer := outPress(t, fake, c)
	answer()
	id, err := c.Send(context.Background(), outRefusal(proposal, it.Token))
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	eph := fake.Ephemerals(outGeneral)
	if len(eph) != 1 || eph[0].ID != id || eph[0].User != outAda || eph[0].Content != "⚠️ only an owner may decide" {
		t.Errorf("ephemerals = %+v (id %s), want the refusal to ada", eph, id)
	}
	if sent := fake.Sent(outGeneral); len(sent) != 1 {
		t.Errorf("channel holds %d bot messages, want only the proposal", len(sent))
	}
	calls := fake.Calls(discordtest.RouteFollowup)
	if len(calls) != 1 || calls[0].Body["flags"] != float64(64) || calls[0].Query.Get("wait") != "true" || calls[0].Body["allowed_mentions"] == nil {
		t.Errorf("follow-ups %+v, want one ephemeral, waited for, pinging no one", calls)
	}
	// A Deliver retried after it succeeded shows nothing twice.
	if again, err := c.Send(context.Background(), outRefusal(proposal, it.Token)); err != nil || again != id || len(fake.Ephemerals(outGeneral)) != 1 {
		t.Errorf("retried Send = %s, %v with %d ephemerals, want %s again", again, err, len(fake.Ephemerals(outGeneral)), id)
	}
	// Without a token, PrivateTo alone is an ordinary reply.
	d := outRefusal(proposal, "")
	d.IdempotencyKey = "notice-2"
	if _, err := c.Send(context.Background(), d); err != nil || len(fake.Sent(outGeneral)) != 2 {
		t.Errorf("PrivateTo without a token: %v, %d messages; want an ordinary reply", err, len(fake.Sent(outGeneral)))
	}
}

// The refusal can reach Discord before the gateway answered the press,
// when the webhook does not exist yet: it is tried again. The
// application's ID is asked once.
func TestPrivateReplyBeforeThePressWasAnswered(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	proposal, it, answer := outPress(t, fake, c)
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), outRefusal(proposal, it.Token))
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.WaitFor(ctx, func() bool { return len(fake.Calls(discordtest.RouteFollowup)) > 0 }); err != nil {
		t.Fatal(err)
	}
	answer()
	if err := <-done; err != nil {
		t.Fatalf("Send: %v", err)
	}
	calls := fake.Calls(discordtest.RouteFollowup)
	if len(calls) != 2 || calls[0].Code != 10015 || calls[1].Status != 200 || len(fake.Ephemerals(outGeneral)) != 1 {
		t.Errorf("follow-ups %+v, want one refused and one shown", calls)
	}
	if me := fake.Calls(discordtest.RouteMe); len(me) != 1 {
		t.Errorf("%d users/@me calls, want the application asked once", len(me))
	}
}

// Past the token's 15 minutes Discord knows no webhook: the text is
// posted in the channel, as a reply, rather than lost.
func TestPrivateReplyWithAnExpiredTokenIsPostedInTheChannel(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{ApplicationID: fake.ApplicationID})
	c.followupRetries = []time.Duration{time.Millisecond}
	proposal, _, _ := outPress(t, fake, c)
	id, err := c.Send(context.Background(), outRefusal(proposal, "expired-token"))
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if m, ok := fake.Message(outGeneral, id); !ok || m.Reply != proposal || m.Content != "⚠️ only an owner may decide" {
		t.Errorf("message %+v, want the refusal as a reply in the channel", m)
	}
	if calls := fake.Calls(discordtest.RouteFollowup); len(calls) != 2 {
		t.Errorf("%d follow-ups, want 2 tries", len(calls))
	}
}
