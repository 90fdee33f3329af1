package main

import (
	"bytes"
	"strings"
	"testing"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
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
