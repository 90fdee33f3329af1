package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
)

// Channel is the channel name of Slack sessions; the workflow renders
// and chunks for it by that name.
const Channel = mrkdwn.Channel

// Identity is who the bot is, as auth.test reports it: its user ID (what
// <@mentions> name) and its bot ID (what its messages carry as bot_id).
type Identity struct {
	UserID string
	BotID  string
}

// Event is what one Events API event becomes: a message for the session,
// a feedback event, or nothing (Skip says why).
type Event struct {
	Inbound  *pipeline.Inbound
	Feedback *pipeline.Feedback
	Skip     string
}

// Parse reads an Events API request body. The signature is checked
// before (VerifyRequest), so the legacy verification token is not. A
// message, app_mention or reaction_added event slack-go cannot read
// whole (a block type or a field's JSON type it does not know yet) is
// read once more with only the fields Normalize reads (salvage).
func Parse(body []byte) (slackevents.EventsAPIEvent, error) {
	ev, _, err := parse(body)
	return ev, err
}

// parse is Parse, and says how an event it salvaged was read; nil when
// slack-go read it whole.
func parse(body []byte) (slackevents.EventsAPIEvent, *Salvage, error) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err == nil {
		return ev, nil, nil
	}
	return salvageWrapped(body, err)
}

// salvageWrapped is salvage, with Parse's error.
func salvageWrapped(body []byte, cause error) (slackevents.EventsAPIEvent, *Salvage, error) {
	ev, s, err := salvage(body, cause)
	if err != nil {
		return ev, nil, fmt.Errorf("the body is not a Slack Events API payload: %w", err)
	}
	return ev, s, nil
}

// Normalize turns one Events API event (from Parse, or from Socket Mode,
// which delivers the same envelope) into an Event. It never fails on
// content: an event it cannot use is skipped with a reason, and every
// Inbound and Feedback it returns is valid.
func Normalize(bot Identity, mode ReplyMode, ev slackevents.EventsAPIEvent, now time.Time) Event {
	if ev.Type != slackevents.CallbackEvent {
		return Event{Skip: "not an event_callback (" + ev.Type + ")"}
	}
	var out Event
	switch inner := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		out = messageEvent(bot, mode, ev.TeamID, inner, now)
	case *slackevents.AppMentionEvent:
		out = mentionEvent(bot, mode, ev.TeamID, inner, now)
	case *slackevents.ReactionAddedEvent:
		out = reactionEvent(bot, ev, inner, now)
	default:
		return Event{Skip: "event type not handled (" + ev.InnerEvent.Type + ")"}
	}
	if out.Inbound != nil {
		if err := out.Inbound.Validate(); err != nil {
			return Event{Skip: "invalid message: " + err.Error()}
		}
	}
	if out.Feedback != nil {
		if err := out.Feedback.Validate(); err != nil {
			return Event{Skip: "invalid reaction: " + err.Error()}
		}
	}
	return out
}

// post is what both twins of a post, message and app_mention, carry.
type post struct {
	channel, channelType  string
	user, botID, username string
	text, ts, threadTS    string
	parentUser            string
	files                 []slack.File
	mentioned             bool
}

// userSubtypes are the message subtypes that are someone's message; all
// others (joins, topic and purpose changes, pins, ...) are skipped.
var userSubtypes = map[string]bool{
	"":                              true,
	slack.MsgSubTypeFileShare:       true,
	slack.MsgSubTypeThreadBroadcast: true,
	slack.MsgSubTypeMeMessage:       true,
	slack.MsgSubTypeBotMessage:      true,
}

func messageEvent(bot Identity, mode ReplyMode, team string, e *slackevents.MessageEvent, now time.Time) Event {
	m := e.Message
	switch {
	case e.SubType == slack.MsgSubTypeMessageDeleted:
		return Event{Skip: "message deleted: what was answered stays answered"}
	case e.SubType == slack.MsgSubTypeMessageChanged:
		// An edit keeps its ts, so the session's dedupe drops it as it
		// does a redelivery. Slack also reports unfurls and reply counts
		// as changes; those are no edits and are skipped here, so an old
		// thread's parent is never taken for new.
		if m == nil || e.PreviousMessage == nil || m.Text == e.PreviousMessage.Text {
			return Event{Skip: "message changed without an edit of its text"}
		}
	case !userSubtypes[e.SubType]:
		return Event{Skip: "housekeeping message (" + e.SubType + ")"}
	}
	if m == nil {
		return Event{Skip: "message event without a message"}
	}
	return postEvent(bot, mode, team, post{
		channel: e.Channel, channelType: e.ChannelType,
		user: m.User, botID: firstOf(m.BotID, e.BotID), username: m.Username,
		text: m.Text, ts: m.Timestamp, threadTS: m.ThreadTimestamp,
		parentUser: m.ParentUserId, files: m.Files,
	}, now)
}

func mentionEvent(bot Identity, mode ReplyMode, team string, e *slackevents.AppMentionEvent, now time.Time) Event {
	return postEvent(bot, mode, team, post{
		channel: e.Channel, user: e.User, botID: e.BotID,
		text: e.Text, ts: e.TimeStamp, threadTS: e.ThreadTimeStamp,
		files: e.Files, mentioned: true,
	}, now)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// postEvent builds the Inbound both twins of a post share: the same
// MessageID (the post's ts, in the session of team + channel) and the
// same MentionsBot, read from the text, so whichever twin arrives first
// carries the mention and the session's dedupe may drop the other.
func postEvent(bot Identity, mode ReplyMode, team string, p post, now time.Time) Event {
	if (bot.UserID != "" && p.user == bot.UserID) || (bot.BotID != "" && p.botID == bot.BotID) {
		return Event{Skip: "the bot's own message"}
	}
	sender := firstOf(p.user, p.botID)
	if sender == "" {
		return Event{Skip: "message without a sender"}
	}
	if p.channelType == "" && strings.HasPrefix(p.channel, "D") {
		p.channelType = ChannelIM // app_mention names no type; DM IDs start with D
	}
	text, us, others := addressing(bot, p.text)
	in := pipeline.Inbound{
		Channel:        Channel,
		Account:        team,
		ChatID:         p.channel,
		ChatType:       pipeline.ChatGroup,
		MessageID:      p.ts,
		SenderID:       sender,
		SenderName:     pipeline.ClipName(p.username),
		SenderIsBot:    p.user == "" || p.botID != "",
		Text:           pipeline.ClipText(text),
		Media:          mediaOf(p.files),
		MentionsBot:    us || p.mentioned,
		MentionsOthers: others && !us && !p.mentioned,
		ThreadID:       Place(p.channelType, p.ts, p.threadTS, mode).ThreadID,
		ReceivedAt:     adapters.ReceivedAt(now, tsTime(p.ts)),
	}
	if p.channelType == ChannelIM {
		in.ChatType = pipeline.ChatDirect
	}
	if p.threadTS != "" && p.threadTS != p.ts {
		// A reply in a thread answers its parent; in a thread the bot
		// started it is addressed to the bot.
		in.ReplyTo = p.threadTS
		in.ReplyToBot = bot.UserID != "" && p.parentUser == bot.UserID
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 {
		return Event{Skip: "message without text or files"}
	}
	return Event{Inbound: &in}
}

// addressing strips the bot's <@mentions> from the text, so "<@B> /status"
// reaches the command parser as "/status", says whether the bot or only
// others were mentioned, and decodes Slack's escapes of & < >.
func addressing(bot Identity, text string) (clean string, us, others bool) {
	var out strings.Builder
	for {
		start := strings.Index(text, "<@")
		if start < 0 {
			break
		}
		end := strings.IndexByte(text[start:], '>')
		if end < 0 {
			break
		}
		end += start
		id, _, _ := strings.Cut(text[start+2:end], "|")
		out.WriteString(text[:start])
		if bot.UserID != "" && id == bot.UserID {
			us = true
			text = strings.TrimPrefix(text[end+1:], " ")
			continue
		}
		others = true
		out.WriteString(text[start : end+1])
		text = text[end+1:]
	}
	out.WriteString(text)
	return slackUnescaper.Replace(strings.TrimSpace(out.String())), us, others
}

var slackUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// mediaOf keeps references to a message's files: their IDs and names.
// The bytes stay with Slack until a tool fetches them (files.info).
func mediaOf(files []slack.File) []pipeline.Media {
	var out []pipeline.Media
	for _, f := range files {
		if f.ID == "" || len(out) == pipeline.MaxMedia {
			continue
		}
		kind, mime := pipeline.MediaKindOf(f.Mimetype), f.Mimetype
		if kind == "video" && isAudioClip(f) {
			kind, mime = "audio", "audio/"+strings.TrimPrefix(mime, "video/")
		}
		out = append(out, pipeline.Media{
			Kind: kind, Ref: f.ID, MimeType: mime, Name: pipeline.ClipFileName(f.Name),
		})
	}
	return out
}

// isAudioClip tells an audio clip recorded in Slack from a video: Slack
// labels some clips video/mp4 or video/webm, and they are transcribed as
// audio. Slack shows them as audio (media_display_type) and names them
// audio_message; slack-go leaves out the file's subtype, slack_audio.
func isAudioClip(f slack.File) bool {
	return f.MediaDisplayType == "audio" || strings.HasPrefix(f.Name, "audio_message")
}

func reactionEvent(bot Identity, ev slackevents.EventsAPIEvent, r *slackevents.ReactionAddedEvent, now time.Time) Event {
	switch {
	case r.Item.Type != "message":
		return Event{Skip: "reaction on a " + r.Item.Type + ", not a message"}
	case bot.UserID != "" && r.User == bot.UserID:
		return Event{Skip: "the bot's own reaction"}
	case r.Reaction == "":
		return Event{Skip: "reaction without an emoji name"}
	}
	eventID := "rx-" + r.User + "-" + r.Item.Timestamp + "-" + r.EventTimestamp
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" {
		eventID = cb.EventID
	}
	f := pipeline.Feedback{
		Channel:   Channel,
		Account:   ev.TeamID,
		ChatID:    r.Item.Channel,
		EventID:   eventID,
		MessageID: r.Item.Timestamp,
		SenderID:  r.User,
		Emoji:     []string{":" + r.Reaction + ":"},
		At:        now.UTC(),
	}
	return Event{Feedback: &f}
}

// MergeTwins folds two Inbounds of one post, the message and app_mention
// events Slack sends for it, into one that keeps a mention either saw;
// ok is false when they are not of one post. Normalize already reads
// mentions from the text, so the twins agree; this is for a caller that
// holds both (a gateway buffering events briefly) and must not lose the
// mention whichever came first.
func MergeTwins(first, second pipeline.Inbound) (merged pipeline.Inbound, ok bool) {
	if first.Session() != second.Session() || first.MessageID != second.MessageID {
		return first, false
	}
	merged = first
	merged.MentionsBot = first.MentionsBot || second.MentionsBot
	merged.MentionsOthers = merged.MentionsOthers && !merged.MentionsBot
	if len(merged.Media) == 0 {
		merged.Media = second.Media
	}
	return merged, true
}
