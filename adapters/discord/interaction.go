package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// NormalizeInteraction turns a button press (INTERACTION_CREATE of a
// message component) into an Inbound whose Action is the button's
// custom_id ("approve:p1"), in the session and lane of the message that
// carried the button, which is its ReplyTo. Its MessageID is the
// interaction's ID, unique per press, and its ReplyToken the interaction
// token, through which the worker can answer the presser alone (an
// ephemeral refusal). Other interactions (slash commands, modals) are
// skipped.
func NormalizeInteraction(botID string, ic *discordgo.Interaction, place Place, now time.Time) Event {
	if ic == nil || ic.Type != discordgo.InteractionMessageComponent {
		return Event{Skip: "interaction that is not a button press"}
	}
	data, ok := ic.Data.(discordgo.MessageComponentInteractionData)
	if !ok || data.ComponentType != discordgo.ButtonComponent || data.CustomID == "" {
		return Event{Skip: "a press on a component that is not a button with a custom_id"}
	}
	if ic.Message == nil || ic.Message.ID == "" {
		return Event{Skip: "a press without the message that carried the button"}
	}
	presser := ic.User
	var member *discordgo.Member
	if ic.Member != nil && ic.Member.User != nil {
		presser, member = ic.Member.User, ic.Member
	}
	if presser == nil {
		return Event{Skip: "a press without a presser"}
	}
	in := pipeline.Inbound{
		Channel:     Channel,
		Account:     botID,
		ChatID:      place.Chat(),
		ChatType:    pipeline.ChatGroup,
		MessageID:   ic.ID,
		SenderID:    presser.ID,
		SenderName:  pipeline.ClipName(senderName(presser, member)),
		SenderIsBot: presser.Bot,
		ReplyTo:     ic.Message.ID,
		ReplyToBot:  ic.Message.Author != nil && ic.Message.Author.ID == botID,
		Action:      data.CustomID,
		ReplyToken:  ic.Token,
		ThreadID:    place.ThreadID(),
		ReceivedAt:  now.UTC(),
	}
	if place.Direct {
		in.ChatType = pipeline.ChatDirect
	}
	if err := in.Validate(); err != nil {
		return Event{Skip: "invalid button press: " + err.Error()}
	}
	return Event{Inbound: &in}
}

// InteractionDeadline is how long Discord waits for an interaction's
// answer; after it the presser sees "This interaction failed".
const InteractionDeadline = 3 * time.Second

// answerBudget is the part of the deadline the Sink may take: the rest is
// for the answer's round trip.
const answerBudget = 2300 * time.Millisecond

// handlePress hands a press to the Sink and, only once the Sink accepted
// it, answers it with a deferred update (type 6: the message stays as it
// is until the session edits it). A press the Sink did not accept in
// time is not answered: the presser sees that it failed and can press
// again, rather than believing a decision was taken that was not. at
// stamps the press; start is when it arrived, for the deadline.
func (r *Receiver) handlePress(ic *discordgo.Interaction, at, start time.Time) {
	ctx, cancel := context.WithDeadline(r.ctx, start.Add(answerBudget))
	defer cancel()
	place, err := r.places.ofEvent(ctx, ic.ChannelID, ic.GuildID)
	if err != nil {
		r.logger.Warn("Discord button press not handed on: its channel is unknown; the presser sees it fail and can press again",
			"interaction", ic.ID, "discord_channel", ic.ChannelID, "error", err)
		return
	}
	ev := NormalizeInteraction(r.botID(), ic, place, at)
	if ev.Inbound == nil {
		r.logger.Debug("Discord interaction skipped", "interaction", ic.ID, "reason", ev.Skip)
		return
	}
	in := *ev.Inbound
	err = r.cfg.Sink.Accept(ctx, in)
	// A press the gateway's rate limits dropped on purpose is answered
	// like an accepted one, so that the presser does not press again and
	// again; the gateway's notice says why nothing happens.
	_, limited := adapters.AsRateLimited(err)
	if err != nil && !limited {
		r.logger.Warn("Discord button press not accepted in time; left unanswered, so the presser sees it fail and can press again",
			"interaction", ic.ID, "action", in.Action, "chat", in.ChatID, "sender", in.SenderID, "error", err)
		return
	}
	answer := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	ctx, cancel = context.WithDeadline(r.ctx, start.Add(InteractionDeadline))
	defer cancel()
	if err := r.session.InteractionRespond(ic, answer, discordgo.WithContext(ctx)); err != nil {
		// Accepted all the same: the session acts on it, and its edit of
		// the message shows the outcome.
		r.logger.Warn("Discord button press accepted but its answer failed; the presser may see \"interaction failed\" though the session has it",
			"interaction", ic.ID, "action", in.Action, "chat", in.ChatID, "error", err)
		return
	}
	if limited {
		r.logger.Debug("Discord button press dropped by the rate limits, and answered", "interaction", ic.ID, "chat", in.ChatID, "sender", in.SenderID)
		return
	}
	r.logger.Info("Discord button press accepted and answered", "interaction", ic.ID, "action", in.Action, "chat", in.ChatID, "sender", in.SenderID)
}
