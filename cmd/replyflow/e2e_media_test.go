package main

import (
	"bytes"
	"database/sql"
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
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

// A photo with a caption reaches the model as an image part beside the
// caption, and a voice note as its transcript; the session's history
// holds neither the image's bytes nor the transcript.
func TestTelegramPhotoAndVoiceNoteReachTheModel(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}
	cfg := testConfig(t)
	cfg.Model, cfg.Media, cfg.TranscribeModel = "openai/gpt-4o", true, "whisper-1"
	s := startTelegramStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: opts}
		acts.Media.Transcriber = models.NewOpenAITranscriber(cfg.TranscribeModel, opts...)
	})
	chat := telegramtest.Private(uniqueTelegramID())

	// A PNG header and 200 KB after it: sniffed as a PNG, and large
	// enough that history would show it.
	png, err := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
	require.NoError(t, err)
	png = append(png, bytes.Repeat([]byte("image-bytes."), 200<<10/12)...)
	s.fake.AddFile("photo-e2e", png)
	oa.Push(modeltest.Step{Text: "a picture of a cat"})
	photo := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Caption: "what is this?", Photo: "photo-e2e"})
	waitFor(t, s.fake, "the answer to the photo", func() bool { return slicesContains(sentTexts(s.fake, chat), "a picture of a cat") })
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}, reqs[0].Images)
	assert.Contains(t, reqs[0].Messages[len(reqs[0].Messages)-1], "what is this?")
	waitFor(t, s.fake, "the photo's reaction cleared", cleared(s.fake, chat, photo))

	s.fake.AddFile("voice-e2e", []byte("OggS a voice note"))
	oa.SetTranscript("remind me to water the plants")
	oa.Push(modeltest.Step{Text: "noted"})
	voice := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Voice: "voice-e2e"})
	waitFor(t, s.fake, "the answer to the voice note", func() bool { return slicesContains(sentTexts(s.fake, chat), "noted") })
	require.Len(t, oa.Transcriptions(), 1)
	reqs = oa.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1], "transcribed: remind me to water the plants")
	waitFor(t, s.fake, "the voice note's reaction cleared", cleared(s.fake, chat, voice))

	raw := rawHistory(t, sessionHistory(t, s.client, tgKey(chat).WorkflowID()))
	assert.NotContains(t, raw, "image-bytes.")
	assert.NotContains(t, raw, base64.StdEncoding.EncodeToString(png[:300]))
	assert.NotContains(t, raw, "water the plants", "the transcript stays in the store")
	assert.Less(t, len(raw), 200<<10, "history does not grow with the file")
}

func slicesContains(texts []string, want string) bool {
	for _, t := range texts {
		if strings.Contains(t, want) {
			return true
		}
	}
	return false
}

// A PDF sent as a Telegram document reaches the model as a document
// part, its bytes as sent, and the session's history holds none of them.
func TestTelegramPDFReachesTheModelAsADocument(t *testing.T) {
	t.Parallel()
	an := modeltest.NewAnthropic()
	t.Cleanup(an.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Media = "anthropic/claude-sonnet-4-5", true
	s := startTelegramStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithBaseURL(an.URL), anthropicopt.WithAPIKey("test")}}
	})
	sender := telegramtest.User{ID: uniqueTelegramID(), Username: "pdfsender", FirstName: "Pat"}
	chat := telegramtest.Private(sender.ID)

	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("pdf-stream-bytes."), 100<<10/17)...)
	s.fake.AddFile("pdf-e2e", pdf)
	an.Push(modeltest.Step{Text: "it is a quarterly report"})
	msg := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: sender, Caption: "what is this?",
		Document: &telegramtest.Document{FileID: "pdf-e2e", FileName: "q3.pdf", MimeType: "application/pdf"}})
	waitFor(t, s.fake, "the answer to the PDF", func() bool { return slicesContains(sentTexts(s.fake, chat), "it is a quarterly report") })
	reqs := an.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []modeltest.Document{{Name: "q3.pdf", MediaType: "application/pdf", Data: pdf, Part: "document"}}, reqs[0].Documents)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "what is this?")
	assert.Contains(t, last, `[document "q3.pdf" (application/pdf) attached, shown below as a document]`)
	waitFor(t, s.fake, "the PDF's reaction cleared", cleared(s.fake, chat, msg))

	raw := rawHistory(t, sessionHistory(t, s.client, tgKey(chat).WorkflowID()))
	assert.NotContains(t, raw, "pdf-stream-bytes.")
	assert.Less(t, len(raw), 100<<10, "history does not grow with the file")
	t.Logf("history of the session: %d bytes, for a turn on a %d-byte PDF", len(raw), len(pdf))
}

// A PDF uploaded to the web chat is kept in the store at the gateway
// (encrypted, with the codec on), reaches the model as a document part,
// and the reply comes back; the store's row holds no clear bytes.
func TestWebchatUploadedPDFReachesTheModelAsADocument(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Media = "openai/gpt-4o", true
	cfg.CodecKeys = codecKeyEntry(t, "k1")
	s := startStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}}
	})
	chat := uniqueChat("upload-e2e")
	events := subscribe(t, s.baseURL, chat)

	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("uploaded-pdf-bytes."), 2000)...)
	oa.Push(modeltest.Step{Text: "a long PDF"})
	status, answer := uploadFile(t, s.baseURL, chat, "up1", "what is this?", "long.pdf", pdf)
	require.Equal(t, http.StatusAccepted, status, answer)

	events.collectUntil(t, 30*time.Second, isReplyTo("up1"))
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []modeltest.Document{{Name: "long.pdf", MediaType: "application/pdf", Data: pdf, Part: "file"}}, reqs[0].Documents)
	assert.Contains(t, reqs[0].Messages[len(reqs[0].Messages)-1], `[document "long.pdf" (application/pdf) attached, shown below as a document]`)

	db, err := sql.Open("sqlite", cfg.StoreDSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	var content string
	require.NoError(t, db.QueryRow(`SELECT content FROM inbound_media WHERE message_id = 'up1'`).Scan(&content))
	assert.True(t, strings.HasPrefix(content, "rfenc1:k1:"), "kept encrypted")
	assert.NotContains(t, content, base64.StdEncoding.EncodeToString(pdf[:60]))
	raw := rawHistory(t, sessionHistory(t, s.client, pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()))
	assert.NotContains(t, raw, "uploaded-pdf-bytes.")
}

// A voice note uploaded to the web chat is kept at the gateway,
// transcribed by the worker from the store, and answered; the model reads
// the transcript beside the caption, and the session's history holds
// neither the sound's bytes nor its transcript.
func TestWebchatUploadedVoiceNoteIsTranscribedAndAnswered(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}
	cfg := testConfig(t)
	cfg.Model, cfg.Media, cfg.TranscribeModel = "openai/gpt-4o", true, "whisper-1"
	s := startStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: opts}
		acts.Media.Transcriber = models.NewOpenAITranscriber(cfg.TranscribeModel, opts...)
	})
	chat := uniqueChat("voice-upload-e2e")
	events := subscribe(t, s.baseURL, chat)

	// An Ogg page header, then enough bytes that history would show them.
	ogg := append([]byte("OggS\x00\x02\x00\x00"), bytes.Repeat([]byte("opus-voice-bytes."), 2000)...)
	oa.SetTranscript("remind me to water the plants")
	oa.Push(modeltest.Step{Text: "noted"})
	status, answer := uploadFile(t, s.baseURL, chat, "vn1", "from the train", "voice.ogg", ogg)
	require.Equal(t, http.StatusAccepted, status, answer)

	seen := events.collectUntil(t, 30*time.Second, isReplyTo("vn1"))
	assert.Equal(t, "noted", seen[len(seen)-1].Text)
	got := oa.Transcriptions()
	require.Len(t, got, 1)
	assert.Equal(t, "voice.ogg", got[0].FileName)
	assert.Equal(t, ogg, got[0].Audio, "the bytes as uploaded")
	reqs := oa.Requests()
	require.Len(t, reqs, 1)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, "from the train")
	assert.Contains(t, last, `[audio "voice.ogg" (audio/ogg), transcribed: remind me to water the plants]`)

	raw := rawHistory(t, sessionHistory(t, s.client, pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()))
	assert.NotContains(t, raw, "opus-voice-bytes.")
	assert.NotContains(t, raw, base64.StdEncoding.EncodeToString(ogg[:60]))
	assert.NotContains(t, raw, "water the plants", "the transcript stays in the store")
}
