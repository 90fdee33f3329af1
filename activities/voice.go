package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Voice replies (/voice on|off): a chat that has them gets each reply
// the model wrote also spoken, once its last chunk is delivered, as a
// voice note where the platform has them (adapters.VoiceSender). The
// /voice command is answered by AgentTurn without the model, as /budget
// is: the session sees an ordinary turn.
type Voice struct {
	// Speaker speaks the replies; Model names its model, for its price
	// (Spend.Prices, per million characters' tokens) and the logs.
	Speaker models.Speaker
	Model   string
	// Default is whether a chat nobody switched gets voice replies
	// (REPLYFLOW_VOICE_REPLIES).
	Default bool
}

// VoiceStore is the part of the store that keeps each chat's /voice;
// *store.Store is the real one.
type VoiceStore interface {
	VoiceReplies(ctx context.Context, chatID string) (on, set bool, err error)
	SetVoiceReplies(ctx context.Context, chatID string, on bool, who string, now time.Time) error
}

// The series of voice replies, recorded through the worker's metrics
// handler.
const (
	// MetricVoiceSent counts the voice replies sent.
	MetricVoiceSent = "replyflow_voice_sent"
	// MetricVoiceFailed counts the voice replies not sent, by what
	// failed: store, speech, send, budget.
	MetricVoiceFailed = "replyflow_voice_failed"
)

// callVoice is the kind the budgets count a speech call as.
const callVoice = "voice"

// voiceKeySuffix makes a voice reply's idempotency key from its last
// chunk's: the delivery ledger records it apart from the chunk.
const voiceKeySuffix = "/voice"

// voiceUsageLine is the answer to a /voice the command does not
// understand.
const voiceUsageLine = "Use /voice to see whether replies here are also spoken, /voice on or /voice off to switch (in a group, owners switch it)."

// parseVoiceCommand reads a message that is the command /voice (also
// /voice@bot, any case): alone (show), or on or off. It is false for any
// other message; a /voice with other words is malformed.
func parseVoiceCommand(text string) (set, on bool, malformed string, ok bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return false, false, "", false
	}
	head, _, _ := strings.Cut(strings.ToLower(fields[0]), "@")
	if head != "/voice" {
		return false, false, "", false
	}
	switch {
	case len(fields) == 1:
		return false, false, "", true
	case len(fields) > 2:
		return false, false, "/voice takes one word, on or off.", true
	}
	switch strings.ToLower(fields[1]) {
	case "on":
		return true, true, "", true
	case "off":
		return true, false, "", true
	}
	return false, false, fmt.Sprintf("/voice takes on or off, not %q.", fields[1]), true
}

// voiceChat is the chat's ID for its /voice: the session's without a
// sender (one choice for the whole chat).
func voiceChat(key pipeline.SessionKey) string {
	key.Sender = ""
	return key.WorkflowID()
}

// voiceCommand answers a turn that is one message, the command /voice,
// without the model; it is false for every other turn. /voice says
// whether the chat's replies are spoken; /voice on|off switches them,
// for anyone in a direct chat and for owners only in a group (decided as
// /budget raise decides it: the settings' owners).
func (a *Activities) voiceCommand(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest) (string, bool, error) {
	if len(req.Messages) != 1 || req.Step != 0 || len(req.Rounds) != 0 || isHeartbeatTurn(req) {
		return "", false, nil
	}
	msg := req.Messages[0]
	set, on, malformed, ok := parseVoiceCommand(msg.Text)
	if !ok {
		return "", false, nil
	}
	if malformed != "" {
		return "⚠️ " + malformed + " " + voiceUsageLine, true, nil
	}
	vs, stored := a.Store.(VoiceStore)
	if a.Voice == nil || a.Voice.Speaker == nil || !stored {
		return "Voice replies are not set up on this agent (an operator sets REPLYFLOW_VOICE_MODEL and keeps a store).", true, nil
	}
	if _, ok := out.(adapters.VoiceSender); !ok {
		return "This platform takes no voice replies: replies here are text only.", true, nil
	}
	sid, chat := req.Session.WorkflowID(), voiceChat(req.Session)
	if !set {
		spoken, err := a.voiceOn(ctx, vs, chat)
		if err != nil {
			return "", false, err
		}
		if spoken {
			return "🔊 Voice replies are on in this chat: each reply is also sent as a voice note. /voice off stops them.", true, nil
		}
		return "Voice replies are off in this chat. /voice on also sends each reply as a voice note.", true, nil
	}
	who := req.Session.Channel + ":" + msg.SenderID
	if req.Group {
		settings, err := a.LoadSettings(ctx, req.Session)
		if err != nil {
			return "", false, fmt.Errorf("load the owners of %s to decide a /voice switch (is the store reachable? REPLYFLOW_STORE_DSN): %w", sid, err)
		}
		if !pipeline.Allowed(who, settings.Owners) {
			a.Logger.Info("Voice switch refused: the sender is not an owner, in a group", "session", sid, "who", who)
			return "⚠️ Only owners switch voice replies in a group. /voice shows whether they are on.", true, nil
		}
	}
	if err := vs.SetVoiceReplies(ctx, chat, on, who, time.Now()); err != nil {
		return "", false, fmt.Errorf("switch the voice replies of %s (is the store reachable? REPLYFLOW_STORE_DSN): %w", chat, err)
	}
	a.Logger.Info("Voice replies switched", "session", sid, "chat", chat, "on", on, "who", who)
	if on {
		return "🔊 Voice replies are on in this chat: each reply is also sent as a voice note.", true, nil
	}
	return "Voice replies are off in this chat: replies are text only.", true, nil
}

// voiceOn is whether the chat's replies are spoken: its /voice, else the
// default.
func (a *Activities) voiceOn(ctx context.Context, vs VoiceStore, chat string) (bool, error) {
	on, set, err := vs.VoiceReplies(ctx, chat)
	if err != nil {
		return false, fmt.Errorf("read whether the replies of %s are spoken (is the store reachable? REPLYFLOW_STORE_DSN): %w", chat, err)
	}
	if !set {
		return a.Voice.Default, nil
	}
	return on, nil
}

// voiceDeferred is the error of a fast first delivery (the session's
// local activity, a few seconds) whose chunk is out but whose voice reply
// did not fit: the session delivers the chunk again as an activity, which
// finds it in the ledger, sends nothing twice and speaks the reply with
// the delivery's whole timeout.
const voiceDeferred = "VoiceDeferred"

// voiceFastMinimum is the time a fast first delivery must have left to
// try the speech call at all; voiceMargin is what the speech call leaves
// of an attempt for the ledger and the answer.
const (
	voiceFastMinimum = 2 * time.Second
	voiceMargin      = 500 * time.Millisecond
)

// speak sends the reply whose last chunk d delivered as a voice reply,
// when the chat has them, the platform takes them and the model wrote the
// reply (the answers given without the model, /voice's own, are not
// spoken). It is sent once: under its own key (d's + "/voice") in the
// delivery ledger. A failure is logged and counted, and never fails the
// chunk, which is out; the one error is voiceDeferred, for a fast first
// delivery that ran out of time.
func (a *Activities) speak(ctx context.Context, out adapters.Outbound, d pipeline.Delivery) error {
	if a.Voice == nil || a.Voice.Speaker == nil || d.IdempotencyKey == "" || d.PrivateTo != "" {
		return nil
	}
	sender, ok := out.(adapters.VoiceSender)
	vs, stored := a.Store.(VoiceStore)
	if !ok || !stored {
		return nil
	}
	sid := d.Session.WorkflowID()
	metrics := metricsOf(ctx)
	failed := func(what, msg string, err error) {
		metrics.WithTags(map[string]string{"what": what}).Counter(MetricVoiceFailed).Inc(1)
		a.Logger.Warn(msg, "session", sid, "internal_id", d.IdempotencyKey, "error", err)
	}
	on, err := a.voiceOn(ctx, vs, voiceChat(d.Session))
	if err != nil {
		failed("store", "Voice reply not sent: whether the chat has them could not be read; the text reply is delivered (is the store reachable? REPLYFLOW_STORE_DSN)", err)
		return nil
	}
	if !on {
		return nil
	}
	key := d.IdempotencyKey + voiceKeySuffix
	if id, found, err := a.Store.PlatformID(ctx, sid, key); err != nil {
		failed("store", "Voice reply not sent: the delivery ledger could not say whether it was sent already, and sending blind could send it twice; the text reply is delivered (is the store reachable? REPLYFLOW_STORE_DSN)", err)
		return nil
	} else if found {
		a.Logger.Info("Voice reply was sent before; not sending it again", "session", sid, "internal_id", key, "platform_id", id)
		return nil
	}
	text, err := a.spokenReply(ctx, d)
	if err != nil {
		failed("store", "Voice reply not sent: the reply could not be read back from the transcript; the text reply is delivered (is the store reachable? REPLYFLOW_STORE_DSN)", err)
		return nil
	}
	if text == "" {
		return nil // not a reply the model wrote
	}
	if err := a.Spend.admitCall(ctx, d.Session, "", "speaking a reply"); err != nil {
		failed("budget", "Voice reply not sent: a budget of the chat is spent; the text reply is delivered (an owner raises it with /budget raise)", err)
		return nil
	}
	fast := activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity
	speakCtx, cancel := ctx, context.CancelFunc(func() {})
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		if fast && left < voiceFastMinimum {
			return a.deferVoice(d, left)
		}
		speakCtx, cancel = context.WithTimeout(ctx, left-voiceMargin)
	}
	defer cancel()
	audio, err := a.Voice.Speaker.Speak(speakCtx, text)
	if err != nil {
		if fast && errors.Is(speakCtx.Err(), context.DeadlineExceeded) {
			return a.deferVoice(d, 0)
		}
		failed("speech", "Voice reply not sent: the speech call failed; the text reply is delivered (check OPENAI_API_KEY and REPLYFLOW_VOICE_MODEL, REPLYFLOW_VOICE_NAME)", err)
		return nil
	}
	a.Spend.counted(ctx, a.Logger, d.Session, "", a.Voice.Model, callVoice, pipeline.Usage{InputTokens: int64(pipeline.EstimateTokens(text))}, func() int64 { return int64(pipeline.EstimateTokens(text)) })
	vd := d
	vd.IdempotencyKey, vd.Text, vd.Buttons, vd.ThenReact, vd.Replaces, vd.Whole = key, "", nil, nil, "", false
	id, err := sender.SendVoice(ctx, vd, adapters.File{Name: adapters.VoiceFileName, ContentType: "audio/ogg", Data: audio})
	if err != nil {
		failed("send", "Voice reply not sent: the platform refused it; the text reply is delivered (see the error; a file over the platform's size limit needs a shorter reply)", err)
		return nil
	}
	a.recordSent(ctx, d.Session, key, id)
	metrics.Counter(MetricVoiceSent).Inc(1)
	a.Logger.Info("Voice reply sent", "session", sid, "internal_id", key, "platform_id", id, "audio_bytes", len(audio))
	return nil
}

// deferVoice is the retryable error of a fast first delivery whose voice
// reply waits for the session's redelivery as an activity.
func (a *Activities) deferVoice(d pipeline.Delivery, left time.Duration) error {
	a.Logger.Info("Voice reply left to the redelivery: the fast first delivery has no time for the speech call; its chunk is out and recorded, and is not sent again",
		"session", d.Session.WorkflowID(), "internal_id", d.IdempotencyKey, "left", left)
	return temporal.NewApplicationError(
		fmt.Sprintf("chunk %d/%d of %s is delivered; its voice reply is left to the delivery as an activity (the fast first delivery had no time for the speech call)", d.Index+1, d.Total, d.Session.WorkflowID()),
		voiceDeferred)
}

// spokenTranscriptWindow is how many of the transcript's newest messages
// are searched for the reply a last chunk ends.
const spokenTranscriptWindow = 6

// spokenReply is the text a voice reply speaks for the last chunk d: the
// whole reply the model wrote in d's turn, as the transcript keeps it
// (without the late note, the reply prefix and the usage footer), cut to
// the speech API's bound at a sentence; "" when d ends no reply the model
// wrote (an answer given without the model, a notice, a proposal). The
// session keys a turn's chunks <session>/<turn>/<index>, and AgentTurn
// keeps the reply as <turn>/<step>/assistant.
func (a *Activities) spokenReply(ctx context.Context, d pipeline.Delivery) (string, error) {
	sid := d.Session.WorkflowID()
	entry, err := a.Store.SessionEntry(ctx, sid)
	if err != nil {
		return "", err
	}
	recent, err := a.Store.Recent(ctx, entry.TranscriptID, spokenTranscriptWindow)
	if err != nil {
		return "", err
	}
	for i := len(recent) - 1; i >= 0; i-- {
		m := recent[i]
		rest, ok := strings.CutSuffix(m.Key, "/assistant")
		if m.Role != "assistant" || !ok {
			continue
		}
		cut := strings.LastIndex(rest, "/")
		if cut < 0 {
			continue
		}
		turnID := rest[:cut]
		if d.IdempotencyKey == sid+"/"+turnID+"/"+strconv.Itoa(d.Index) {
			return models.SpeechText(m.Body, models.MaxSpeechChars), nil
		}
	}
	return "", nil
}
