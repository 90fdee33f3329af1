package discordtest_test

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

// proposal sends a message with Approve and Reject buttons.
func proposal(t *testing.T, dg *discordgo.Session, channel string) *discordgo.Message {
	t.Helper()
	row := discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{CustomID: "rf:approve:s1:p1", Label: "Approve", Style: discordgo.SuccessButton},
		discordgo.Button{CustomID: "rf:reject:s1:p1", Label: "Reject", Style: discordgo.DangerButton},
	}}
	m, err := dg.ChannelMessageSendComplex(channel, &discordgo.MessageSend{Content: "run `rm -rf build`?", Components: []discordgo.MessageComponent{row}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestButtonPressDeferredThenEditedWithoutButtons(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	ev := connect(t, dg, allIntents)
	m := proposal(t, dg, general)
	pressed := fake.Press(discordtest.Press{Channel: general, Message: m.ID, User: ada, CustomID: "rf:approve:s1:p1", Permissions: 8})
	ic := next(t, ev.interactions, "INTERACTION_CREATE")
	if ic.ID != pressed.ID || ic.Token != pressed.Token || ic.Type != discordgo.InteractionMessageComponent || ic.AppID != fake.ApplicationID {
		t.Fatalf("interaction = %+v, want the press", ic.Interaction)
	}
	data := ic.MessageComponentData()
	if data.CustomID != "rf:approve:s1:p1" || data.ComponentType != discordgo.ButtonComponent || ic.Member == nil ||
		ic.Member.User.ID != ada || ic.Member.Permissions != 8 || ic.Message.ID != m.ID || ic.GuildID != guildID || ic.ChannelID != general {
		t.Errorf("press = %+v by %+v, want ada's Approve on the proposal in general", data, ic.Member)
	}

	deferred := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	if err := dg.InteractionRespond(ic.Interaction, deferred); err != nil {
		t.Fatalf("deferred update: %v", err)
	}
	if err := dg.InteractionRespond(ic.Interaction, deferred); !hasCode(err, 400, 40060) {
		t.Errorf("second answer: err = %v, want 400 40060 already acknowledged", err)
	}
	outcome := "approved by ada"
	if _, err := dg.InteractionResponseEdit(ic.Interaction, &discordgo.WebhookEdit{Content: &outcome, Components: &[]discordgo.MessageComponent{}}); err != nil {
		t.Fatalf("edit @original: %v", err)
	}
	if got, _ := fake.Message(general, m.ID); got.Content != outcome || len(got.Buttons) != 0 || got.Edits != 1 {
		t.Errorf("proposal = %+v, want the outcome without buttons", got)
	}
	if r := fake.Responses(pressed.ID); len(r) != 1 || r[0].Type != 6 {
		t.Errorf("responses = %+v, want one deferred update", r)
	}
}

func TestRefusalIsEphemeral(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	ev := connect(t, dg, allIntents)
	m := proposal(t, dg, dmID)
	fake.Press(discordtest.Press{Channel: dmID, Message: m.ID, User: ada, CustomID: "rf:reject:s1:p1"})
	ic := next(t, ev.interactions, "INTERACTION_CREATE")
	if ic.User == nil || ic.User.ID != ada || ic.Member != nil || ic.GuildID != "" {
		t.Errorf("DM press by %+v member %+v, want the user without a member", ic.User, ic.Member)
	}
	refusal := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "only the owner decides", Flags: discordgo.MessageFlagsEphemeral}}
	if err := dg.InteractionRespond(ic.Interaction, refusal); err != nil {
		t.Fatal(err)
	}
	if _, err := dg.FollowupMessageCreate(ic.Interaction, true, &discordgo.WebhookParams{Content: "ask them", Flags: discordgo.MessageFlagsEphemeral}); err != nil {
		t.Fatal(err)
	}
	e := fake.Ephemerals(dmID)
	if len(e) != 2 || e[0].User != ada || e[0].Content != "only the owner decides" || e[1].Content != "ask them" {
		t.Errorf("ephemerals = %+v, want the refusal and the follow-up, to ada", e)
	}
	if sent := fake.Messages(dmID); len(sent) != 1 {
		t.Errorf("channel holds %+v, want only the proposal: ephemerals are not messages", sent)
	}
	if r := fake.Responses(); len(r) != 1 || r[0].Type != 4 || r[0].Flags != 64 {
		t.Errorf("responses = %+v, want one ephemeral message", r)
	}
}

func TestInteractionDeadlineAndUnknownWebhook(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	fake, dg := start(t, discordtest.Options{Now: clk.Now})
	m := proposal(t, dg, general)
	late := fake.Press(discordtest.Press{Channel: general, Message: m.ID, User: ada, CustomID: "rf:approve:s1:p1"})
	it := &discordgo.Interaction{ID: late.ID, Token: late.Token, AppID: fake.ApplicationID}
	if _, err := dg.FollowupMessageCreate(it, true, &discordgo.WebhookParams{Content: "x"}); !hasCode(err, 404, 10015) {
		t.Errorf("follow-up before the answer: err = %v, want 404 10015", err)
	}
	clk.Add(fake.InteractionDeadline + time.Millisecond)
	if err := dg.InteractionRespond(it, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); !hasCode(err, 404, 10062) {
		t.Errorf("answer after the deadline: err = %v, want 404 10062 Unknown interaction", err)
	}
	wrong := &discordgo.Interaction{ID: late.ID, Token: "forged"}
	if err := dg.InteractionRespond(wrong, &discordgo.InteractionResponse{Type: 6}); !hasCode(err, 404, 10062) {
		t.Errorf("answer with a wrong token: err = %v, want 404 10062", err)
	}
	if len(fake.Responses()) != 0 {
		t.Errorf("responses = %+v, want none accepted", fake.Responses())
	}
}
