package slack

import (
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/pipeline"
)

func TestFilesBecomeMediaReferencesAndAudioClipsLabelledVideoAreAudio(t *testing.T) {
	files := []slack.File{
		{ID: "F1", Name: "cat.png", Mimetype: "image/png"},
		{ID: "F2", Name: "audio_message.mp4", Mimetype: "video/mp4"},
		{ID: "F3", Name: "clip.webm", Mimetype: "video/webm", MediaDisplayType: "audio"},
		{ID: "F4", Name: "holiday.mp4", Mimetype: "video/mp4", MediaDisplayType: "video"},
		{ID: "F5", Name: "audio_message.m4a", Mimetype: "audio/mp4"},
		{Name: "no-id.txt", Mimetype: "text/plain"},
		{ID: "F6", Name: "q3.pdf", Mimetype: "application/pdf"},
	}
	assert.Equal(t, []pipeline.Media{
		{Kind: "photo", Ref: "F1", MimeType: "image/png", Name: "cat.png"},
		{Kind: "audio", Ref: "F2", MimeType: "audio/mp4", Name: "audio_message.mp4"},
		{Kind: "audio", Ref: "F3", MimeType: "audio/webm", Name: "clip.webm"},
		{Kind: "video", Ref: "F4", MimeType: "video/mp4", Name: "holiday.mp4"},
		{Kind: "audio", Ref: "F5", MimeType: "audio/mp4", Name: "audio_message.m4a"},
		{Kind: "document", Ref: "F6", MimeType: "application/pdf", Name: "q3.pdf"},
	}, mediaOf(files))
}

func TestAMessageKeepsAtMostMaxMediaFiles(t *testing.T) {
	files := make([]slack.File, pipeline.MaxMedia+3)
	for i := range files {
		files[i] = slack.File{ID: "F" + string(rune('A'+i)), Name: "f.txt", Mimetype: "text/plain"}
	}
	got := mediaOf(files)
	assert.Len(t, got, pipeline.MaxMedia)
	assert.Equal(t, "FA", got[0].Ref)
}
