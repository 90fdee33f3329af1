package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// The files of these tests no model is given: each message's text is
// answered all the same, and the model reads, in the file's place, the
// line that says what went wrong. The fake model echoes the user's text
// (modeltest: no scripted step), as a model that passes the line on to
// the user does, so the reply shows what the user is told.

// unfetchableMaxBytes is REPLYFLOW_MEDIA_MAX_BYTES in these tests: small,
// so that a file over it is small too.
const unfetchableMaxBytes = 64 << 10

// Files whose type is sniffed from their bytes, whatever their name says.
var (
	// zipBytes are a zip archive's: its local file header, then a
	// little content.
	zipBytes = append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), bytes.Repeat([]byte("zipped."), 64)...)
	// svgBytes are an SVG image, which can hold script and sniffs as
	// text.
	svgBytes = []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><script>alert(1)</script><rect width="8" height="8"/></svg>`)
)

// tooLargePDF is a PDF over unfetchableMaxBytes, marked so a test can
// tell its bytes.
func tooLargePDF(marker string) []byte { return testPDF(marker, unfetchableMaxBytes+16<<10) }

// Lines the model reads in place of a file, as activities/media.go words
// them; desc is the file's description (pipeline.Media.Describe).
func goneLine(desc string) string {
	return "[" + desc + " attached, but it could not be downloaded: the platform no longer has it]"
}

func tooLargeLine(desc string) string {
	return "[" + desc + " attached, but it could not be downloaded: it is too large]"
}

func notAnImageLine(desc, sniffed string) string {
	return "[" + desc + " attached, but it is not an image the model can take (its bytes are " + sniffed + ")]"
}

// unfetchableCase is one message with a file no model is given.
type unfetchableCase struct {
	name string
	// text is the message's own text; line what the model reads in the
	// file's place.
	text, line string
}

// unfetchableCases are the files every platform's test sends, and the
// line the model reads for each: gone is the description
// (pipeline.Media.Describe) of a file the platform no longer serves, png
// that of a file the platform calls photo.png, an image/png.
func unfetchableCases(gone, png string) []unfetchableCase {
	return []unfetchableCase{
		{name: "gone", text: "what is in this one?", line: goneLine(gone)},
		{name: "too large", text: "can you summarize the report?", line: tooLargeLine(`document "big.pdf" (application/pdf)`)},
		{name: "a zip named photo.png", text: "what do you see in the photo?", line: notAnImageLine(png, "application/zip")},
		{name: "an SVG named photo.png", text: "and in this one?", line: notAnImageLine(png, "text/plain; charset=utf-8")},
	}
}

// withEchoingOpenAI is a config with files on, bounded at
// unfetchableMaxBytes, whose model is a fake OpenAI model that takes
// images and PDFs, and a function that starts the stack's worker with
// it.
func withEchoingOpenAI(t *testing.T) (Config, *modeltest.Server, func(*stack)) {
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.Media, cfg.MediaMaxBytes = "openai/gpt-4o", true, unfetchableMaxBytes
	start := func(s *stack) {
		s.startWorkerWith(func(acts *activities.Activities) {
			acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}}
		})
	}
	return cfg, oa, start
}

// assertAnsweredWithoutTheFile checks the model call of one case: its
// user turn holds the message's text and the case's line, and no image
// or document part; and that the reply the user got names what went
// wrong as the line does.
func assertAnsweredWithoutTheFile(t *testing.T, c unfetchableCase, req modeltest.Request, reply string) {
	t.Helper()
	last := req.Messages[len(req.Messages)-1]
	assert.True(t, strings.HasPrefix(last, "user: "), "the last message is the user's: %q", last)
	assert.Contains(t, last, c.text, "the model reads the message's text")
	assert.Contains(t, last, c.line, "the model reads why the file is not shown")
	assert.NotContains(t, last, "attached, ref ", "the file's line was replaced")
	assert.Empty(t, req.Images, "no image part")
	assert.Empty(t, req.Documents, "no document part")
	assert.Contains(t, reply, c.line, "the user is told what went wrong")
	assert.Contains(t, reply, c.text)
}

// A photo Telegram no longer serves (its download answers 404), a
// document over REPLYFLOW_MEDIA_MAX_BYTES (refused from the size getFile
// gives, never downloaded), a zip and an SVG each sent as "photo.png":
// each message's caption is answered, once, without the file, and the
// user is told why; each message's reaction ends cleared.
func TestTelegramFilesThatCannotBeFetchedAreAnsweredAndTheTextIsToo(t *testing.T) {
	t.Parallel()
	cfg, oa, startWorker := withEchoingOpenAI(t)
	s := startTelegramStack(t, cfg)
	startWorker(s.stack)
	sender := telegramtest.User{ID: uniqueTelegramID(), Username: "filesender", FirstName: "Fay"}
	chat := telegramtest.Private(sender.ID)

	s.fake.AddFile("gone-photo", []byte("\xff\xd8\xff\xe0 a photo"))
	s.fake.RemoveFile("gone-photo")
	s.fake.AddFile("big-pdf", tooLargePDF("telegram-big-pdf."))
	s.fake.AddFile("zip-as-png", zipBytes)
	s.fake.AddFile("svg-as-png", svgBytes)
	incoming := map[string]func(caption string) telegramtest.Incoming{
		"gone": func(caption string) telegramtest.Incoming {
			return telegramtest.Incoming{Chat: chat, From: sender, Caption: caption, Photo: "gone-photo"}
		},
		"too large": func(caption string) telegramtest.Incoming {
			return telegramtest.Incoming{Chat: chat, From: sender, Caption: caption,
				Document: &telegramtest.Document{FileID: "big-pdf", FileName: "big.pdf", MimeType: "application/pdf"}}
		},
		"a zip named photo.png": func(caption string) telegramtest.Incoming {
			return telegramtest.Incoming{Chat: chat, From: sender, Caption: caption,
				Document: &telegramtest.Document{FileID: "zip-as-png", FileName: "photo.png", MimeType: "image/png"}}
		},
		"an SVG named photo.png": func(caption string) telegramtest.Incoming {
			return telegramtest.Incoming{Chat: chat, From: sender, Caption: caption,
				Document: &telegramtest.Document{FileID: "svg-as-png", FileName: "photo.png", MimeType: "image/png"}}
		},
	}

	var sent []int
	for i, c := range unfetchableCases("photo (image/jpeg)", `document "photo.png" (image/png)`) {
		downloads := s.fake.Downloads()
		msg := s.fake.AddMessage(incoming[c.name](c.text))
		sent = append(sent, msg)
		waitFor(t, s.fake, "the answer to "+c.name, func() bool { return len(s.fake.Sent(chat.ID)) > i })
		replies := s.fake.Sent(chat.ID)
		reqs := oa.Requests()
		require.Len(t, reqs, i+1, "one model call a message (%s)", c.name)
		assertAnsweredWithoutTheFile(t, c, reqs[i], replies[i].Text)
		assert.Equal(t, msg, replies[i].ReplyTo, "the answer to %s replies to it", c.name)
		if c.name == "too large" {
			assert.Equal(t, downloads, s.fake.Downloads(), "the file over the limit is refused from getFile's size, never downloaded")
		}
	}

	s.waitCleared(chat, sent...)
	assert.Len(t, s.fake.Sent(chat.ID), len(sent), "each message answered once: %q", sentTexts(s.fake, chat))
	assert.Len(t, oa.Requests(), len(sent), "one model call a message")
	assert.Equal(t, 2, s.fake.Downloads(), "the zip and the SVG downloaded once each; the gone photo's 404 not retried")
	assert.Len(t, s.fake.Calls("getFile"), len(sent), "each file looked up once")
	raw := rawHistory(t, sessionHistory(t, s.client, tgKey(chat).WorkflowID()))
	assert.NotContains(t, raw, "telegram-big-pdf.")
	assert.NotContains(t, raw, "zipped.")
}

// A PDF url_private no longer serves (404), one Slack deleted since it
// was shared (files.info answers file_deleted), a PDF over
// REPLYFLOW_MEDIA_MAX_BYTES (refused from the size files.info gives,
// never downloaded), a zip and an SVG each shared as "photo.png": each
// post's text is answered in its thread, once, without the file, and the
// user is told why; each post's reaction ends cleared.
func TestSlackFilesThatCannotBeFetchedAreAnsweredAndTheTextIsToo(t *testing.T) {
	t.Parallel()
	cfg, oa, startWorker := withEchoingOpenAI(t)
	s := startSlackStackIn(t, cfg, slackSocket)
	startWorker(s.stack)
	channel := s.newSlackChannel()

	gone := `document "scan.pdf" (application/pdf)`
	cases := append(unfetchableCases(gone, `photo "photo.png" (image/png)`),
		unfetchableCase{name: "deleted", text: "and the old scan?", line: goneLine(`document "old-scan.pdf" (application/pdf)`)})
	files := map[string]slacktest.File{
		"gone":                   {ID: "FGONE", Name: "scan.pdf", Mimetype: "application/pdf", Size: 40 << 10},
		"too large":              {ID: "FBIG", Name: "big.pdf", Mimetype: "application/pdf", Data: tooLargePDF("slack-big-pdf.")},
		"a zip named photo.png":  {ID: "FZIP", Name: "photo.png", Mimetype: "image/png", Data: zipBytes},
		"an SVG named photo.png": {ID: "FSVG", Name: "photo.png", Mimetype: "image/png", Data: svgBytes},
		"deleted":                {ID: "FDELETED", Name: "old-scan.pdf", Mimetype: "application/pdf", Data: testPDF("slack-deleted-pdf.", 4<<10), Deleted: true},
	}

	var posts []string
	for i, c := range cases {
		downloads := s.fake.Downloads()
		post, events := s.fake.AddMessage(slacktest.Post{Channel: channel, User: "U0ALICE", Subtype: "file_share",
			Text: "<@" + s.fake.BotUserID + "> " + c.text, Files: []slacktest.File{files[c.name]}})
		for _, ev := range events {
			s.deliver(ev)
		}
		posts = append(posts, post.TS)
		waitForSlack(t, s.fake, "the answer to "+c.name, func() bool { return len(s.botReplies(channel, post.TS)) > 0 })
		reqs := oa.Requests()
		require.Len(t, reqs, i+1, "one model call a post (%s)", c.name)
		assertAnsweredWithoutTheFile(t, c, reqs[i], s.botReplies(channel, post.TS)[0].Text)
		if c.name == "too large" {
			assert.Equal(t, downloads, s.fake.Downloads(), "the file over the limit is refused from files.info's size, never downloaded")
		}
	}

	s.waitCleared(channel, posts...)
	for i, ts := range posts {
		assert.Len(t, s.botReplies(channel, ts), 1, "the post of %s answered once", cases[i].name)
	}
	assert.Len(t, oa.Requests(), len(posts), "one model call a post")
	assert.Equal(t, 2, s.fake.Downloads(), "the zip and the SVG downloaded once each; the 404 not retried")
	assert.Len(t, s.fake.Calls("files.info"), len(posts), "each file looked up once")
	raw := rawHistory(t, sessionHistory(t, s.client, s.key(channel).WorkflowID()))
	assert.NotContains(t, raw, "slack-big-pdf.")
	assert.NotContains(t, raw, "zipped.")
}

// A PDF Discord's CDN no longer serves (404, as an attachment URL past
// its signature's expiry), a PDF over REPLYFLOW_MEDIA_MAX_BYTES, a zip
// and an SVG each attached as "photo.png": each post's text is answered
// as a reply, once, without the file, and the user is told why; each
// post's reaction ends cleared. The reference a turn fetches by carries
// no size, though the post states it: the file over the limit is asked
// of the CDN, once, and refused there (its Content-Length, or its first
// bytes past the limit).
func TestDiscordFilesThatCannotBeFetchedAreAnsweredAndTheTextIsToo(t *testing.T) {
	t.Parallel()
	cfg, oa, startWorker := withEchoingOpenAI(t)
	s := startDiscordStack(t, cfg)
	startWorker(s.stack)
	channel := s.newChannel()

	big := tooLargePDF("discord-big-pdf.")
	attachments := map[string]discordtest.Attachment{
		"gone":                   {Filename: "scan.pdf", ContentType: "application/pdf", Size: 40 << 10},
		"too large":              {Filename: "big.pdf", ContentType: "application/pdf", Size: len(big), Data: big},
		"a zip named photo.png":  {Filename: "photo.png", ContentType: "image/png", Size: len(zipBytes), Data: zipBytes},
		"an SVG named photo.png": {Filename: "photo.png", ContentType: "image/png", Size: len(svgBytes), Data: svgBytes},
	}

	var posts []discordtest.Message
	for i, c := range unfetchableCases(`document "scan.pdf" (application/pdf)`, `photo "photo.png" (image/png)`) {
		post := s.fake.Post(discordtest.Post{Channel: channel, Author: discordAlice, Content: "<@" + s.fake.BotID + "> " + c.text,
			Attachments: []discordtest.Attachment{attachments[c.name]}})
		posts = append(posts, post)
		waitForDiscord(t, s.fake, "the answer to "+c.name, func() bool { return len(s.fake.Sent(channel)) > i })
		replies := s.fake.Sent(channel)
		reqs := oa.Requests()
		require.Len(t, reqs, i+1, "one model call a post (%s)", c.name)
		assertAnsweredWithoutTheFile(t, c, reqs[i], replies[i].Content)
		assertQuietReplyTo(t, post, replies[i])
	}

	ids := make([]string, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	s.waitCleared(channel, ids...)
	assert.Len(t, s.fake.Sent(channel), len(posts), "each post answered once")
	assert.Len(t, oa.Requests(), len(posts), "one model call a post")
	assert.Equal(t, len(big)+len(zipBytes)+len(svgBytes), s.fake.CDNBytes(),
		"each file asked of the CDN once: the 404 not retried, the file over the limit refused at its first answer")
	raw := rawHistory(t, sessionHistory(t, s.client, s.key(channel).WorkflowID()))
	assert.NotContains(t, raw, "discord-big-pdf.")
	assert.NotContains(t, raw, "zipped.")
}

// The web chat has no platform to fetch from: its page uploads the file,
// and the gateway refuses one over REPLYFLOW_MEDIA_MAX_BYTES (413) or of
// a type it does not take (415: a zip or an SVG named photo.png, sniffed
// from the bytes) with the reason, which the page shows under the
// message; nothing of a refused message reaches the session. A file the
// store no longer keeps by the time the turn reads it is the web chat's
// "gone": the message's text is answered, once, without it, and the user
// is told why; the message's reaction ends cleared.
func TestWebchatFilesThatCannotBeFetchedAreRefusedWithTheReasonOrAnswered(t *testing.T) {
	t.Parallel()
	cfg, oa, startWorker := withEchoingOpenAI(t)
	s := startStack(t, cfg)
	chat := uniqueChat("unfetchable")
	events := subscribe(t, s.baseURL, chat)

	// The web chat refuses the other three at the upload: no line is
	// made for them, so their files' descriptions do not matter.
	cases := unfetchableCases(`document "notes.txt" (text/plain)`, "")
	refused := []struct {
		c          unfetchableCase
		data       []byte
		name       string
		status     int
		answerSays string
	}{
		{cases[1], tooLargePDF("webchat-big-pdf."), "big.pdf", http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the file is larger than %d bytes, the most the web chat takes (REPLYFLOW_MEDIA_MAX_BYTES)", unfetchableMaxBytes)},
		{cases[2], zipBytes, "photo.png", http.StatusUnsupportedMediaType, "the file's bytes are application/zip, which the web chat does not take"},
		{cases[3], svgBytes, "photo.png", http.StatusUnsupportedMediaType, "the file's bytes are image/svg+xml, which the web chat does not take"},
	}
	for i, r := range refused {
		code, answer := uploadFile(t, s.baseURL, chat, fmt.Sprintf("refused%d", i), r.c.text, r.name, r.data)
		assert.Equal(t, r.status, code, "%s: %s", r.c.name, answer)
		var body struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(answer), &body), answer)
		assert.Contains(t, body.Error, r.answerSays, "the page shows why %s was not sent", r.c.name)
	}

	// A file kept while no worker runs, whose bytes the store drops
	// before the turn reads them, as it does past REPLYFLOW_MEDIA_RETENTION
	// or the chat's bounds (REPLYFLOW_MEDIA_CHAT_FILES): the turn finds it
	// gone.
	gone := cases[0]
	code, answer := uploadFile(t, s.baseURL, chat, "gone1", gone.text, "notes.txt", []byte("the first note"))
	require.Equal(t, http.StatusAccepted, code, answer)
	db, err := sql.Open("sqlite", cfg.StoreDSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	dropped, err := db.Exec(`UPDATE inbound_media SET content = '', transcript = '', stored_at = NULL WHERE message_id = 'gone1'`)
	require.NoError(t, err)
	n, err := dropped.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the upload's bytes were kept, and are dropped")
	startWorker(s)

	replies := 0
	seen := events.collectUntil(t, time.Minute, func(ev sseEvent) bool {
		if ev.Type == "message" {
			replies++
		}
		return isClearOf("gone1")(ev)
	})
	assert.Equal(t, 1, replies, "the accepted message answered once, the refused ones never")
	reply := ""
	for _, ev := range seen {
		if isReplyTo("gone1")(ev) {
			reply = ev.Text
		}
	}
	reqs := oa.Requests()
	require.Len(t, reqs, 1, "one model call, for the accepted message")
	assertAnsweredWithoutTheFile(t, gone, reqs[0], reply)
	for _, req := range reqs {
		for _, r := range refused {
			for _, m := range req.Messages {
				assert.NotContains(t, m, r.c.text, "%s never reached the session", r.c.name)
			}
		}
	}
}

// uploadFile posts a message with a file to the web chat as its page
// does (a multipart upload), and returns the answer's status and body.
func uploadFile(t *testing.T, baseURL, chat, messageID, text, name string, data []byte) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("message_id", messageID))
	require.NoError(t, mw.WriteField("sender_id", "alice"))
	require.NoError(t, mw.WriteField("text", text))
	fw, err := mw.CreateFormFile("file", name)
	require.NoError(t, err)
	_, err = fw.Write(data)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	resp, err := http.Post(baseURL+"/api/chats/"+chat+"/uploads", mw.FormDataContentType(), &body)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}
