package activities

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

// pngBytes is a 1×1 PNG: what http.DetectContentType sniffs as image/png.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")

// mediaTurn is a worker's activities over the fake Telegram and the fake
// OpenAI, with a store in which the gateway recorded message "7"'s files.
type mediaTurn struct {
	acts  *Activities
	db    *store.Store
	tg    *telegramtest.Server
	model *modeltest.Server
	key   pipeline.SessionKey
}

func newMediaTurn(t *testing.T, media ...pipeline.Media) mediaTurn {
	ctx := context.Background()
	tg := telegramtest.New("1000:secret")
	t.Cleanup(tg.Close)
	out, err := telegram.NewClient(telegram.ClientConfig{Token: "1000:secret", APIURL: tg.URL()})
	require.NoError(t, err)
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	key := pipeline.SessionKey{Channel: telegram.Channel, Account: "1000", Chat: "42"}
	require.NoError(t, db.RecordMedia(ctx, key.WorkflowID(), "7", media))
	acts := &Activities{
		Store:    db,
		Models:   &models.Registry{OpenAIOptions: opts},
		Outbound: map[string]adapters.Outbound{telegram.Channel: out},
		Media:    &Media{MaxBytes: 1 << 20, Transcriber: models.NewOpenAITranscriber("whisper-1", opts...)},
		Logger:   slog.Default(),
	}
	return mediaTurn{acts: acts, db: db, tg: tg, model: oa, key: key}
}

// turn runs one AgentTurn of message "7", whose text is what the session
// renders of it (pipeline.Inbound.TextWithMedia), with model.
func (m mediaTurn) turn(t *testing.T, model, caption string, media ...pipeline.Media) pipeline.TurnResult {
	in := pipeline.Inbound{Text: caption, Media: media}
	v, err := newActivityEnv(m.acts).ExecuteActivity(m.acts.AgentTurn, pipeline.TurnRequest{
		Session: m.key, TurnID: "t1", Model: model, Text: in.TextWithMedia(),
		Messages: []pipeline.TurnMessage{{MessageID: "7", SenderID: "42", SenderName: "Alice", Text: in.TextWithMedia()}},
	})
	require.NoError(t, err)
	var res pipeline.TurnResult
	require.NoError(t, v.Get(&res))
	return res
}

func TestAnImageReachesTheModelAsAnImagePartWithItsCaption(t *testing.T) {
	photo := pipeline.Media{Kind: "photo", Ref: "photo-1", MimeType: "image/jpeg"}
	m := newMediaTurn(t, photo)
	m.tg.AddFile("photo-1", pngBytes)

	m.turn(t, "openai/gpt-4o", "what is this?", photo)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}, reqs[0].Images, "the bytes as downloaded, their type sniffed")
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, "[photo (image/jpeg) attached, shown below]")
	assert.NotContains(t, last, "photo-1", "the reference is not the model's business once it sees the image")

	// A later step or attempt reads the image from the store.
	m.turn(t, "openai/gpt-4o", "what is this?", photo)
	assert.Equal(t, 1, m.tg.Downloads(), "downloaded once")
	require.Len(t, m.model.Requests(), 2)
	assert.Len(t, m.model.Requests()[1].Images, 1)

	// The transcript keeps the text, not the bytes.
	entry, err := m.db.SessionEntry(context.Background(), m.key.WorkflowID())
	require.NoError(t, err)
	msgs, err := m.db.Recent(context.Background(), entry.TranscriptID, 10)
	require.NoError(t, err)
	require.NotEmpty(t, msgs)
	assert.Contains(t, msgs[0].Body, "[photo (image/jpeg) attached, shown below]")
}

func TestAModelThatTakesNoImagesGetsTheTextAndANote(t *testing.T) {
	photo := pipeline.Media{Kind: "photo", Ref: "photo-1", MimeType: "image/jpeg"}
	m := newMediaTurn(t, photo)
	m.tg.AddFile("photo-1", pngBytes)

	m.turn(t, "openai/some-local-model", "what is this?", photo)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Images)
	assert.Contains(t, reqs[0].Messages[len(reqs[0].Messages)-1], "not shown: this model does not take images")
	assert.Zero(t, m.tg.Downloads(), "nothing downloaded for a model that cannot see it")
}

// With a model after it in the round that takes images, one that does
// not declines the turn (a non-retryable ErrImagesUnsupported, which
// moves the step on) without downloading or asking anything; with none
// after it that does, it is asked, told the image is not shown.
func TestAModelThatTakesNoImagesDeclinesForALaterOneThatDoes(t *testing.T) {
	photo := pipeline.Media{Kind: "photo", Ref: "photo-1", MimeType: "image/jpeg"}
	m := newMediaTurn(t, photo)
	m.tg.AddFile("photo-1", pngBytes)
	in := pipeline.Inbound{Text: "what is this?", Media: []pipeline.Media{photo}}
	ask := func(next ...string) error {
		_, err := newActivityEnv(m.acts).ExecuteActivity(m.acts.AgentTurn, pipeline.TurnRequest{
			Session: m.key, TurnID: "t1", Model: "openai/some-local-model", NextModels: next, Text: in.TextWithMedia(),
			Messages: []pipeline.TurnMessage{{MessageID: "7", SenderID: "42", Text: in.TextWithMedia()}},
		})
		return err
	}

	err := ask("openai/another-local-model", "openai/gpt-4o")
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrImagesUnsupported, app.Type())
	assert.True(t, app.NonRetryable())
	assert.Contains(t, app.Message(), "openai/gpt-4o, next in the chain, does")
	assert.Empty(t, m.model.Requests(), "the model is not asked")
	assert.Zero(t, m.tg.Downloads(), "nor the file downloaded")

	require.NoError(t, ask("openai/another-local-model"), "no model after it takes images: it answers")
	require.Len(t, m.model.Requests(), 1)
	assert.Contains(t, m.model.Requests()[0].Messages[len(m.model.Requests()[0].Messages)-1], "not shown: this model does not take images")
}

func TestAVoiceNoteIsTranscribedOnceAndTheTranscriptIsWhatTheModelReads(t *testing.T) {
	voice := pipeline.Media{Kind: "voice", Ref: "voice-1", MimeType: "audio/ogg"}
	m := newMediaTurn(t, voice)
	audio := []byte("OggS fake voice note")
	m.tg.AddFile("voice-1", audio)
	m.model.SetTranscript("book a table for two at eight")

	m.turn(t, "openai/gpt-4o", "", voice)
	m.turn(t, "openai/gpt-4o", "", voice)
	got := m.model.Transcriptions()
	require.Len(t, got, 1, "a second attempt reads the transcript from the store")
	assert.Equal(t, "whisper-1", got[0].Model)
	assert.Equal(t, "voice.ogg", got[0].FileName)
	assert.True(t, bytes.Equal(audio, got[0].Audio))
	for _, r := range m.model.Requests() {
		last := r.Messages[len(r.Messages)-1]
		assert.Contains(t, last, "[voice (audio/ogg), transcribed: book a table for two at eight]")
		assert.NotContains(t, last, "voice-1")
	}
}

// A sound whose bytes the gateway kept (a web chat upload) is
// transcribed from the store, once, and never downloaded; the transcript
// takes the bytes' place there.
func TestAnUploadedSoundIsTranscribedFromTheStore(t *testing.T) {
	audio := pipeline.Media{Kind: "audio", Ref: "upload:42/7/0", MimeType: "audio/webm", Name: "voice-note.webm"}
	m := newMediaTurn(t, audio)
	sound := []byte("\x1a\x45\xdf\xa3 a recorded voice note")
	require.NoError(t, m.db.SaveMediaContent(context.Background(), m.key.WorkflowID(), "7", 0, base64.StdEncoding.EncodeToString(sound), ""))
	m.model.SetTranscript("call the plumber")

	m.turn(t, "openai/gpt-4o", "from the train", audio)
	m.turn(t, "openai/gpt-4o", "from the train", audio)
	got := m.model.Transcriptions()
	require.Len(t, got, 1, "a second attempt reads the transcript from the store")
	assert.Equal(t, "voice-note.webm", got[0].FileName)
	assert.True(t, bytes.Equal(sound, got[0].Audio))
	assert.Zero(t, m.tg.Downloads())
	for _, r := range m.model.Requests() {
		last := r.Messages[len(r.Messages)-1]
		assert.Contains(t, last, "from the train")
		assert.Contains(t, last, `[audio "voice-note.webm" (audio/webm), transcribed: call the plumber]`)
	}
	kept, err := m.db.MessageMedia(context.Background(), m.key.WorkflowID(), []string{"7"})
	require.NoError(t, err)
	require.Len(t, kept["7"], 1)
	assert.Empty(t, kept["7"][0].Content, "the transcript takes the bytes' place")
}

func TestAFileThatCannotBeFetchedIsSaidSoAndTheTextIsStillAnswered(t *testing.T) {
	big := pipeline.Media{Kind: "photo", Ref: "big", MimeType: "image/jpeg"}
	gone := pipeline.Media{Kind: "photo", Ref: "gone", MimeType: "image/jpeg"}
	notImage := pipeline.Media{Kind: "photo", Ref: "svg", MimeType: "image/jpeg"}
	m := newMediaTurn(t, big, gone, notImage)
	m.acts.Media.MaxBytes = 1000
	m.tg.AddFile("big", bytes.Repeat([]byte{0xff}, 2000))
	m.tg.AddFile("gone", pngBytes)
	m.tg.RemoveFile("gone")
	m.tg.AddFile("svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`))

	m.turn(t, "openai/gpt-4o", "look", big, gone, notImage)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Images)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "look")
	assert.Equal(t, 1, strings.Count(last, "could not be downloaded: it is too large"), last)
	assert.Equal(t, 1, strings.Count(last, "could not be downloaded: the platform no longer has it"), last)
	assert.Contains(t, last, "not an image the model can take")
	assert.Zero(t, m.tg.Downloads()-1, "the large one was refused from getFile's size, before its download")
}

func TestAMessageWithoutRecordedFilesKeepsItsMediaLine(t *testing.T) {
	m := newMediaTurn(t)
	photo := pipeline.Media{Kind: "photo", Ref: "forged", MimeType: "image/jpeg"}
	m.tg.AddFile("forged", pngBytes)
	m.turn(t, "openai/gpt-4o", "", photo)
	assert.Empty(t, m.model.Requests()[0].Images, "only what the gateway recorded is fetched, never a reference typed in a message")
	assert.Zero(t, m.tg.Downloads())
}

func TestADiscordAttachmentIsFetchedFromTheCDNOnly(t *testing.T) {
	const channel = "100000000000000300"
	fake := discordtest.New(discordtest.Options{})
	t.Cleanup(fake.Close)
	fake.AddUser(discordtest.User{ID: "100000000000000500", Name: "ada"})
	fake.AddChannel(discordtest.Channel{ID: channel, Type: discordtest.DM, Recipient: "100000000000000500"})
	out, err := discord.NewClient(discord.ClientConfig{Token: fake.Token, APIURL: fake.APIURL()})
	require.NoError(t, err)
	posted := fake.Post(discordtest.Post{Channel: channel, Author: "100000000000000500", Content: "what is this?",
		Attachments: []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png", Size: len(pngBytes), Data: pngBytes}}})
	photo := pipeline.Media{Kind: "photo", Ref: posted.Attachments[0].URL(channel), MimeType: "image/png", Name: "cat.png"}
	elsewhere := pipeline.Media{Kind: "photo", Ref: "https://example.com/cat.png", MimeType: "image/png", Name: "cat.png"}

	m := newMediaTurn(t)
	m.key = pipeline.SessionKey{Channel: discord.Channel, Account: "900000000000000001", Chat: channel}
	m.acts.Outbound = map[string]adapters.Outbound{discord.Channel: out}
	require.NoError(t, m.db.RecordMedia(context.Background(), m.key.WorkflowID(), "7", []pipeline.Media{photo, elsewhere}))
	m.turn(t, "openai/gpt-4o", "what is this?", photo, elsewhere)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}, reqs[0].Images)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, `[photo "cat.png" (image/png) attached, shown below]`)
	assert.Contains(t, last, "could not be downloaded", "a reference off Discord's CDN is not fetched")
	assert.Equal(t, len(pngBytes), fake.CDNBytes())
}

func TestASlackFileIsFetchedWithTheBotTokenFromItsPrivateURL(t *testing.T) {
	fake := slacktest.New(slacktest.Options{})
	t.Cleanup(fake.Close)
	fake.AddChannel(slacktest.Channel{ID: "D1", Members: 2})
	out, err := slack.NewClient(slack.ClientConfig{Token: fake.BotToken, APIURL: fake.APIURL(), PostInterval: -1})
	require.NoError(t, err)
	fake.AddMessage(slacktest.Post{Channel: "D1", User: "U1", Text: "what is this?", Subtype: "file_share",
		Files: []slacktest.File{{ID: "F1", Name: "cat.png", Mimetype: "image/png", Data: pngBytes}}})
	photo := pipeline.Media{Kind: "photo", Ref: "F1", MimeType: "image/png", Name: "cat.png"}
	gone := pipeline.Media{Kind: "photo", Ref: "F404", MimeType: "image/png", Name: "gone.png"}

	m := newMediaTurn(t)
	m.key = pipeline.SessionKey{Channel: slack.Channel, Account: fake.TeamID, Chat: "D1"}
	m.acts.Outbound = map[string]adapters.Outbound{slack.Channel: out}
	require.NoError(t, m.db.RecordMedia(context.Background(), m.key.WorkflowID(), "7", []pipeline.Media{photo, gone}))
	m.turn(t, "openai/gpt-4o", "what is this?", photo, gone)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}, reqs[0].Images)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, `[photo "cat.png" (image/png) attached, shown below]`)
	assert.Contains(t, last, `[photo "gone.png" (image/png) attached, but it could not be downloaded`)
}

// A worker's turns with files take a slot each while they hold the
// bytes: past Concurrent, the next waits until one is given back, or its
// turn ends.
func TestTurnsWithFilesWaitForASlot(t *testing.T) {
	m := &Media{Concurrent: 2}
	first, err := m.hold(context.Background())
	require.NoError(t, err)
	second, err := m.hold(context.Background())
	require.NoError(t, err)

	got := make(chan func(), 1)
	go func() {
		release, err := m.hold(context.Background())
		if err == nil {
			got <- release
		}
	}()
	select {
	case <-got:
		t.Fatal("a third turn held files while two did")
	case <-time.After(50 * time.Millisecond):
	}
	first()
	first() // once, however often it is called
	var third func()
	select {
	case third = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the slot given back was not taken")
	}

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.hold(ended)
	assert.ErrorIs(t, err, context.Canceled, "a turn that ended stops waiting")
	second()
	third()
	release, err := m.hold(context.Background())
	require.NoError(t, err, "every slot was given back")
	release()

	unbounded := &Media{}
	for range 100 {
		_, err := unbounded.hold(context.Background())
		require.NoError(t, err)
	}
}

// An image whose bytes sniff as a PNG but whose header is cut off or
// broken is named as such to the model, which answers the text; its
// bytes reach no provider, which would refuse the whole request.
func TestABrokenImageIsSaidSoAndTheTextIsStillAnswered(t *testing.T) {
	broken := pipeline.Media{Kind: "photo", Ref: "broken-1", MimeType: "image/jpeg", Name: "broken.png"}
	cut := pipeline.Media{Kind: "photo", Ref: "cut-1", MimeType: "image/jpeg"}
	whole := pipeline.Media{Kind: "photo", Ref: "whole-1", MimeType: "image/jpeg"}
	m := newMediaTurn(t, broken, cut, whole)
	m.tg.AddFile("broken-1", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xff\xff\xff\x08"))
	m.tg.AddFile("cut-1", pngBytes[:20])
	m.tg.AddFile("whole-1", pngBytes)

	m.turn(t, "openai/gpt-4o", "what are these?", broken, cut, whole)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}, reqs[0].Images, "the whole image alone")
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what are these?")
	assert.Contains(t, last, `[photo "broken.png" (image/jpeg) attached, not shown: its bytes start as image/png but are no readable image (a broken or cut-off file)]`)
	assert.Contains(t, last, `[photo (image/jpeg) attached, not shown: its bytes start as image/png but are no readable image`)
	assert.Contains(t, last, `[photo (image/jpeg) attached, shown below]`)
}

func TestAudioNameEndsInAFormatTheTranscriptionAPIReads(t *testing.T) {
	for _, tc := range []struct {
		m    pipeline.Media
		want string
	}{
		{pipeline.Media{Kind: "voice", MimeType: "audio/ogg"}, "voice.ogg"},
		{pipeline.Media{Kind: "audio", MimeType: "audio/mp4", Name: "audio_message.m4a"}, "audio_message.m4a"},
		{pipeline.Media{Kind: "audio", MimeType: "audio/webm", Name: "voice-note.WEBM"}, "voice-note.WEBM"},
		{pipeline.Media{Kind: "audio", MimeType: "audio/ogg", Name: "memo"}, "memo.ogg"},
		{pipeline.Media{Kind: "audio", MimeType: "audio/mpeg", Name: "talk.txt"}, "talk.mp3"},
		{pipeline.Media{Kind: "audio", MimeType: "audio/flac", Name: "lossless"}, "lossless.flac"},
		{pipeline.Media{Kind: "audio", MimeType: "audio/x-unknown", Name: "clip"}, "clip.ogg"},
	} {
		assert.Equal(t, tc.want, audioName(tc.m), "%+v", tc.m)
	}
}

// A transcription is a model call like any other: it is counted against
// the budgets by the audio's size (its provider bills its length, and a
// long near-silent recording yields few words), and refused once a
// budget is spent, so a sender cannot run up transcriptions the budgets
// never see.
func TestTranscriptionsAreCountedAndRefusedOnceABudgetIsSpent(t *testing.T) {
	first := pipeline.Media{Kind: "voice", Ref: "voice-1", MimeType: "audio/ogg"}
	second := pipeline.Media{Kind: "voice", Ref: "voice-2", MimeType: "audio/ogg"}
	m := newMediaTurn(t, first, second)
	m.acts.Spend = &Spend{Store: m.db, Budgets: Budgets{SenderTokens: 3000}}
	long := bytes.Repeat([]byte{0}, 300_000) // 400 s at 6 kbit/s: 4,001 tokens
	m.tg.AddFile("voice-1", long)
	m.tg.AddFile("voice-2", long)
	m.model.SetTranscript("um")

	m.turn(t, "openai/gpt-4o", "", first, second)
	assert.Equal(t, 1, len(m.model.Transcriptions()), "the first spends the sender's budget; the second is not transcribed")
	last := m.model.Requests()[0].Messages[len(m.model.Requests()[0].Messages)-1]
	assert.Contains(t, last, "transcribed: um]")
	assert.Contains(t, last, "not transcribed: a budget of this chat is spent]")
}
