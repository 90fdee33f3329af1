package main

import (
	"testing"

	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// /voice on in a direct chat, answered without the model; the next
// message gets its text reply and one voice note (sendVoice) of the
// reply, spoken by the speech API as Ogg/Opus.
func TestTelegramVoiceOnSendsTheReplyAsAVoiceNote(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}
	cfg := testConfig(t)
	cfg.Model = "openai/gpt-4o"
	s := startTelegramStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256, OpenAIOptions: opts}
		acts.Voice = &activities.Voice{Speaker: models.NewOpenAISpeaker(cfg.VoiceModel, cfg.VoiceName, opts...), Model: "openai/" + cfg.VoiceModel}
	})
	sender := telegramtest.User{ID: uniqueTelegramID(), Username: "voiceuser", FirstName: "Vic"}
	chat := telegramtest.Private(sender.ID)

	on := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: sender, Text: "/voice on"})
	waitFor(t, s.fake, "the answer to /voice on", func() bool { return slicesContains(sentTexts(s.fake, chat), "Voice replies are on in this chat") })
	waitFor(t, s.fake, "the command's reaction cleared", cleared(s.fake, chat, on))
	assert.Empty(t, oa.Requests(), "/voice is answered without the model")
	assert.Empty(t, oa.Speeches(), "the command's answer is not spoken")

	oa.Push(modeltest.Step{Text: "Water the plants at six. Then rest."})
	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: sender, Text: "what should I do tonight?"})
	waitFor(t, s.fake, "the text reply", func() bool { return slicesContains(sentTexts(s.fake, chat), "Water the plants at six.") })
	waitFor(t, s.fake, "the voice note", func() bool { return len(voiceNotes(s.fake, chat)) > 0 })
	require.Equal(t, []modeltest.Speech{{Model: "gpt-4o-mini-tts", Voice: "alloy", Format: "opus", Input: "Water the plants at six. Then rest."}}, oa.Speeches())
	notes := voiceNotes(s.fake, chat)
	require.Len(t, notes, 1, "one voice note")
	assert.Equal(t, modeltest.SpeechAudio("Water the plants at six. Then rest."), notes[0].VoiceNote.Data)
	assert.Equal(t, "reply.ogg", notes[0].VoiceNote.Name)
	assert.Len(t, s.fake.Calls("sendVoice"), 1, "sent once")
}

// voiceNotes are the voice notes the bot sent in chat.
func voiceNotes(fake *telegramtest.Server, chat telegramtest.Chat) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range fake.Sent(chat.ID) {
		if m.VoiceNote != nil {
			out = append(out, m)
		}
	}
	return out
}
