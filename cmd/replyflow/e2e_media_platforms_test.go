package main

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// testPDF is a PDF's header and size bytes after it, each a marker the
// history must not show.
func testPDF(marker string, size int) []byte {
	return append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte(marker), size/len(marker))...)
}

// assertOneDocument checks that the model was given one document, want,
// its bytes compared without printing them (a failure names their sizes).
func assertOneDocument(t *testing.T, want modeltest.Document, got []modeltest.Document) {
	t.Helper()
	if !assert.Len(t, got, 1, "one document part") {
		return
	}
	assert.Equal(t, want.Name, got[0].Name)
	assert.Equal(t, want.MediaType, got[0].MediaType)
	assert.Equal(t, want.Part, got[0].Part)
	assert.True(t, bytes.Equal(want.Data, got[0].Data), "the document's bytes are the file's: %d bytes given, %d sent", len(got[0].Data), len(want.Data))
}

// A PDF shared in a Slack message with a mention of the bot is fetched
// as Slack serves it (files.info, then url_private with the bot token),
// reaches the model as a document part beside the message's text, and
// the answer is delivered in the post's thread; the session's history
// holds none of the PDF's bytes.
func TestSlackSharedPDFReachesTheModelAsADocument(t *testing.T) {
	t.Parallel()
	an := modeltest.NewAnthropic()
	t.Cleanup(an.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Media = "anthropic/claude-sonnet-4-5", true
	s := startSlackStackIn(t, cfg, slackSocket)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithBaseURL(an.URL), anthropicopt.WithAPIKey("test")}}
	})
	channel := s.newSlackChannel()

	pdf := testPDF("slack-pdf-bytes.", 100<<10)
	an.Push(modeltest.Step{Text: "it is the Slack quarterly report"})
	post, events := s.fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Subtype: "file_share",
		Text:  "<@" + s.fake.BotUserID + "> what is this?",
		Files: []slacktest.File{{ID: "F" + strings.TrimPrefix(channel, "C"), Name: "q3.pdf", Mimetype: "application/pdf", Data: pdf}}})
	for _, ev := range events {
		s.deliver(ev)
	}
	waitForSlack(t, s.fake, "the answer in the post's thread", func() bool { return len(s.botReplies(channel, post.TS)) > 0 })
	s.waitCleared(channel, post.TS)

	replies := s.botReplies(channel, post.TS)
	require.Len(t, replies, 1)
	assert.Contains(t, replies[0].Text, "it is the Slack quarterly report")
	reqs := an.Requests()
	require.Len(t, reqs, 1)
	assertOneDocument(t, modeltest.Document{Name: "q3.pdf", MediaType: "application/pdf", Data: pdf, Part: "document"}, reqs[0].Documents)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, `[document "q3.pdf" (application/pdf) attached, shown below as a document]`)
	assert.Len(t, s.fake.Calls("files.info"), 1, "the file's size and address were asked once")
	assert.Equal(t, 1, s.fake.Downloads(), "url_private served the file once")

	raw := rawHistory(t, sessionHistory(t, s.client, s.key(channel).WorkflowID()))
	assert.NotContains(t, raw, "slack-pdf-bytes.")
	assert.Less(t, len(raw), 100<<10, "history does not grow with the file")
}

// A PDF attached to a Discord message that mentions the bot is fetched
// from Discord's CDN, reaches the model as a document part beside the
// message's text, and the answer is delivered as a reply; the session's
// history holds none of the PDF's bytes.
func TestDiscordAttachedPDFReachesTheModelAsADocument(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Media = "openai/gpt-4o", true
	s := startDiscordStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}}
	})
	channel := s.newChannel()

	pdf := testPDF("discord-pdf-bytes.", 100<<10)
	oa.Push(modeltest.Step{Text: "it is the Discord quarterly report"})
	post := s.fake.Post(discordtest.Post{Channel: channel, Author: discordAlice, Content: "<@" + s.fake.BotID + "> what is this?",
		Attachments: []discordtest.Attachment{{Filename: "q3.pdf", ContentType: "application/pdf", Size: len(pdf), Data: pdf}}})
	waitForDiscord(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(channel)) > 0 })
	s.waitCleared(channel, post.ID)

	replies := s.fake.Sent(channel)
	require.Len(t, replies, 1)
	assert.Contains(t, replies[0].Content, "it is the Discord quarterly report")
	assertQuietReplyTo(t, post, replies[0])
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	assertOneDocument(t, modeltest.Document{Name: "q3.pdf", MediaType: "application/pdf", Data: pdf, Part: "file"}, reqs[0].Documents)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, `[document "q3.pdf" (application/pdf) attached, shown below as a document]`)
	assert.Equal(t, len(pdf), s.fake.CDNBytes(), "the CDN served the file once")

	raw := rawHistory(t, sessionHistory(t, s.client, s.key(channel).WorkflowID()))
	assert.NotContains(t, raw, "discord-pdf-bytes.")
	assert.Less(t, len(raw), 100<<10, "history does not grow with the file")
}

// testPNG is a PNG's header and size bytes of marker after it: sniffed
// as a PNG, large enough that history would show it, and marked so that
// it would be seen there.
func testPNG(t *testing.T, marker string, size int) []byte {
	t.Helper()
	png, err := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
	require.NoError(t, err)
	return append(png, bytes.Repeat([]byte(marker), size/len(marker))...)
}

// assertOneImage checks that the model was given one image, data, as a
// data URL, without printing its bytes.
func assertOneImage(t *testing.T, data []byte, got []string) {
	t.Helper()
	if !assert.Len(t, got, 1, "one image part") {
		return
	}
	assert.True(t, got[0] == "data:image/png;base64,"+base64.StdEncoding.EncodeToString(data),
		"the image part is the file's bytes as a PNG data URL: %d characters given, %.40s...", len(got[0]), got[0])
}

// assertOneTranscription checks that the fake's transcription endpoint
// was sent one file: name, its bytes data.
func assertOneTranscription(t *testing.T, name string, data []byte, got []modeltest.Transcription) {
	t.Helper()
	if !assert.Len(t, got, 1, "one transcription") {
		return
	}
	assert.Equal(t, "whisper-1", got[0].Model)
	assert.Equal(t, name, got[0].FileName)
	assert.True(t, bytes.Equal(data, got[0].Audio), "the audio is the file's: %d bytes sent, %d in the file", len(got[0].Audio), len(data))
}

// openAIWithTranscripts points cfg at an OpenAI model that takes images,
// with media on and transcription through whisper-1, and returns a fake
// OpenAI and the worker setup whose models and transcriber are that
// fake's.
func openAIWithTranscripts(t *testing.T, cfg *Config) (*modeltest.Server, func(acts *activities.Activities)) {
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}
	cfg.Model, cfg.Media, cfg.TranscribeModel = "openai/gpt-4o", true, "whisper-1"
	return oa, func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: opts}
		acts.Media.Transcriber = models.NewOpenAITranscriber(cfg.TranscribeModel, opts...)
	}
}

// An image shared with a caption in a DM with the bot reaches the model
// as an image part beside the caption, and an audio clip recorded in
// Slack (a file_share post without text, its file a slack_audio clip of
// type audio/mp4) as its transcript. Each is fetched as Slack serves
// files (files.info, then url_private with the bot token), each turn's
// reaction is cleared, and the session's history holds neither file's
// bytes nor the transcript.
func TestSlackSharedImageAndAudioClipReachTheModel(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	oa, withModels := openAIWithTranscripts(t, &cfg)
	s := startSlackStackIn(t, cfg, slackSocket)
	s.startWorkerWith(withModels)
	dm := uniqueSlackChannel("D")
	s.fake.AddChannel(slacktest.Channel{ID: dm, Members: 2})
	share := func(text string, f slacktest.File) slacktest.Message {
		post, events := s.fake.AddMessage(slacktest.Post{Channel: dm, User: "U0ALICE", Subtype: "file_share", Text: text, Files: []slacktest.File{f}})
		for _, ev := range events {
			s.deliver(ev)
		}
		return post
	}
	answered := func(text string) func() bool {
		return func() bool {
			for _, m := range s.fake.Sent(dm) {
				if strings.Contains(m.Text, text) {
					return true
				}
			}
			return false
		}
	}

	png := testPNG(t, "slack-image-bytes.", 200<<10)
	oa.Push(modeltest.Step{Text: "a picture of a Slack cat"})
	photo := share("what is this?", slacktest.File{ID: "FIMG" + dm[1:], Name: "cat.png", Mimetype: "image/png", Data: png})
	waitForSlack(t, s.fake, "the answer to the image", answered("a picture of a Slack cat"))
	s.waitCleared(dm, photo.TS)
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	assertOneImage(t, png, reqs[0].Images)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, `[photo "cat.png" (image/png) attached, shown below]`)

	clip := append([]byte("\x00\x00\x00\x1cftypM4A \x00\x00\x00\x00M4A isommp42"), bytes.Repeat([]byte("slack-clip-bytes."), 2000)...)
	oa.SetTranscript("book the room for Thursday")
	oa.Push(modeltest.Step{Text: "booked"})
	voice := share("", slacktest.File{ID: "FAUD" + dm[1:], Name: "audio_message.m4a", Mimetype: "audio/mp4", Subtype: "slack_audio", Data: clip})
	waitForSlack(t, s.fake, "the answer to the audio clip", answered("booked"))
	s.waitCleared(dm, voice.TS)
	assertOneTranscription(t, "audio_message.m4a", clip, oa.Transcriptions())
	reqs = oa.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1], `[audio "audio_message.m4a" (audio/mp4), transcribed: book the room for Thursday]`)
	assert.Len(t, s.fake.Calls("files.info"), 2, "each file's size and address were asked once")
	assert.Equal(t, 2, s.fake.Downloads(), "url_private served each file once")

	raw := rawHistory(t, sessionHistory(t, s.client, s.key(dm).WorkflowID()))
	assert.NotContains(t, raw, "slack-image-bytes.")
	assert.NotContains(t, raw, base64.StdEncoding.EncodeToString(png[:300]))
	assert.NotContains(t, raw, "slack-clip-bytes.")
	assert.NotContains(t, raw, "room for Thursday", "the transcript stays in the store")
	assert.Less(t, len(raw), 200<<10, "history does not grow with the files")
}

// An image attached with a text to a DM with the bot reaches the model as
// an image part beside the text, and a voice message (flagged
// IS_VOICE_MESSAGE, no content, one audio/ogg attachment
// voice-message.ogg with its duration and waveform, as Discord's client
// records it) as its transcript. Each is fetched from Discord's CDN,
// each turn's reaction is cleared, and the session's history holds
// neither file's bytes nor the transcript.
func TestDiscordAttachedImageAndVoiceMessageReachTheModel(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	oa, withModels := openAIWithTranscripts(t, &cfg)
	s := startDiscordStack(t, cfg)
	s.startWorkerWith(withModels)
	dm := newSnowflake()
	s.fake.AddChannel(discordtest.Channel{ID: dm, Type: discordtest.DM, Recipient: discordAlice})
	answered := func(text string) func() bool {
		return func() bool { return slicesContains(contents(s.fake.Sent(dm)), text) }
	}

	png := testPNG(t, "discord-image-bytes.", 200<<10)
	oa.Push(modeltest.Step{Text: "a picture of a Discord cat"})
	photo := s.fake.Post(discordtest.Post{Channel: dm, Author: discordAlice, Content: "what is this?",
		Attachments: []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png", Size: len(png), Data: png}}})
	waitForDiscord(t, s.fake, "the answer to the image", answered("a picture of a Discord cat"))
	s.waitCleared(dm, photo.ID)
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	assertOneImage(t, png, reqs[0].Images)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, `[photo "cat.png" (image/png) attached, shown below]`)

	ogg := append([]byte("OggS\x00\x02"), bytes.Repeat([]byte("discord-voice-bytes."), 2000)...)
	oa.SetTranscript("call me back after lunch")
	oa.Push(modeltest.Step{Text: "will do"})
	voice := s.fake.Post(discordtest.Post{Channel: dm, Author: discordAlice, Flags: discordtest.FlagVoiceMessage,
		Attachments: []discordtest.Attachment{{Filename: "voice-message.ogg", ContentType: "audio/ogg", Size: len(ogg), Data: ogg,
			DurationSecs: 2.4, Waveform: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0, 40, 120, 200, 90}, 12))}}})
	waitForDiscord(t, s.fake, "the answer to the voice message", answered("will do"))
	s.waitCleared(dm, voice.ID)
	assertOneTranscription(t, "voice-message.ogg", ogg, oa.Transcriptions())
	reqs = oa.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1], `[audio "voice-message.ogg" (audio/ogg), transcribed: call me back after lunch]`)
	assert.Equal(t, len(png)+len(ogg), s.fake.CDNBytes(), "the CDN served each file once")

	raw := rawHistory(t, sessionHistory(t, s.client, s.key(dm).WorkflowID()))
	assert.NotContains(t, raw, "discord-image-bytes.")
	assert.NotContains(t, raw, base64.StdEncoding.EncodeToString(png[:300]))
	assert.NotContains(t, raw, "discord-voice-bytes.")
	assert.NotContains(t, raw, "after lunch", "the transcript stays in the store")
	assert.Less(t, len(raw), 200<<10, "history does not grow with the files")
}

// A PNG uploaded to the web chat with a caption reaches the model as an
// image part beside the caption, and the reply comes back; the session's
// history holds none of the image's bytes.
func TestWebchatUploadedImageReachesTheModelWithItsCaption(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Media = "openai/gpt-4o", true
	s := startStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}}
	})
	chat := uniqueChat("image-e2e")
	events := subscribe(t, s.baseURL, chat)

	png := testPNG(t, "webchat-image-bytes.", 200<<10)
	oa.Push(modeltest.Step{Text: "a picture of a cat"})
	status, answer := uploadFile(t, s.baseURL, chat, "img1", "what is this?", "cat.png", png)
	require.Equal(t, http.StatusAccepted, status, answer)
	events.collectUntil(t, 30*time.Second, isReplyTo("img1"))

	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	assertOneImage(t, png, reqs[0].Images)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, `[photo "cat.png" (image/png) attached, shown below]`)
	raw := rawHistory(t, sessionHistory(t, s.client, pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()))
	assert.NotContains(t, raw, "webchat-image-bytes.")
	assert.Less(t, len(raw), 200<<10, "history does not grow with the file")
}
