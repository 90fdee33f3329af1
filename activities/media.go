package activities

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Media is how a turn shows the model the files of its messages. The
// gateway records each message's references in the store
// (adapters.MediaLog); the turn's activity downloads each file through
// its platform's adapters.FileFetcher, keeps an image's bytes or a voice
// note's transcript in the store (never in workflow history), and gives
// images to the model as image content and transcripts as text. A later
// attempt or step reads them from the store; an attempt cut short
// before it saved them downloads them again.
type Media struct {
	// MaxBytes bounds one file (REPLYFLOW_MEDIA_MAX_BYTES); a larger one
	// is refused, before the download where the platform gives the size.
	MaxBytes int64
	// Transcriber turns voice notes and audio into text; nil leaves them
	// lines of text.
	Transcriber models.Transcriber
	// SeesImages says which models take images; nil is
	// models.SeesImages' defaults per family.
	SeesImages func(model string) bool
}

// MediaStore is the part of the store that keeps the files of messages;
// *store.Store is the real one.
type MediaStore interface {
	MessageMedia(ctx context.Context, sessionID string, messageIDs []string) (map[string][]store.StoredMedia, error)
	SaveMediaContent(ctx context.Context, sessionID, messageID string, seq int, content, transcript string) error
}

// maxTurnImages bounds the images one model step is shown: the newest
// messages' first.
const maxTurnImages = 10

// imageTypes are the image types the providers take; the type is sniffed
// from the bytes, never taken from the platform or the file's name.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// withMedia returns the request with each of its files' line in the text
// replaced by what the model is given instead (a transcript, or a note
// that the image follows, or why the file is not shown), and the images
// to show with the user turn. Without Media, a store that keeps files or
// recorded files, it returns the request as it is.
func (a *Activities) withMedia(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest) (pipeline.TurnRequest, []models.Image) {
	ms, ok := a.Store.(MediaStore)
	if a.Media == nil || !ok || len(req.Messages) == 0 {
		return req, nil
	}
	sessionID := req.Session.WorkflowID()
	ids := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		ids[i] = m.MessageID
	}
	files, err := ms.MessageMedia(ctx, sessionID, ids)
	if err != nil {
		a.Logger.Warn("The files of the turn's messages were not read; the model sees them as lines of text", "session", sessionID, "turn_id", req.TurnID, "error", err)
		return req, nil
	}
	sees := a.Media.SeesImages
	if sees == nil {
		sees = models.SeesImages
	}
	var images []models.Image
	for i := len(ids) - 1; i >= 0; i-- {
		for _, f := range files[ids[i]] {
			line := f.Line()
			if !strings.Contains(req.Text, line) {
				continue // not in this turn's text (a command, or cut)
			}
			shown, img := a.fileFor(ctx, out, ms, sessionID, f, sees(req.Model) && len(images) < maxTurnImages)
			if img != nil {
				images = append(images, *img)
			}
			req.Text = strings.Replace(req.Text, line, shown, 1)
		}
	}
	// The newest messages' images were taken first; the model reads them
	// in the order they were sent.
	for i, j := 0, len(images)-1; i < j; i, j = i+1, j-1 {
		images[i], images[j] = images[j], images[i]
	}
	return req, images
}

// fileFor is what the model is given of one file: the line that stands
// for it in the text, and the image to show, if it is one and show.
func (a *Activities) fileFor(ctx context.Context, out adapters.Outbound, ms MediaStore, sessionID string, f store.StoredMedia, show bool) (string, *models.Image) {
	desc := f.Describe()
	switch {
	case f.Transcript != "":
		return "[" + desc + ", transcribed: " + f.Transcript + "]", nil
	case isAudio(f.Media):
		if a.Media.Transcriber == nil {
			return f.Line(), nil
		}
	case isImage(f.Media):
		if !show {
			return "[" + desc + " attached, not shown: this model does not take images]", nil
		}
		if f.Content != "" {
			if data, err := base64.StdEncoding.DecodeString(f.Content); err == nil {
				return "[" + desc + " attached, shown below]", &models.Image{MimeType: http.DetectContentType(data), Data: data}
			}
		}
	default:
		return f.Line(), nil
	}
	fetcher, ok := out.(adapters.FileFetcher)
	if !ok {
		return f.Line(), nil
	}
	data, err := fetcher.FetchFile(ctx, f.Media, a.Media.MaxBytes)
	if err != nil {
		a.Logger.Warn("A file of a message was not downloaded", "session", sessionID, "message_id", f.MessageID, "kind", f.Kind, "error", err)
		return "[" + desc + " attached, but it could not be downloaded: " + fetchProblem(err) + "]", nil
	}
	if isAudio(f.Media) {
		return a.transcribed(ctx, ms, sessionID, f, data)
	}
	mime := http.DetectContentType(data)
	if !imageTypes[mime] {
		return "[" + desc + " attached, but it is not an image the model can take (its bytes are " + mime + ")]", nil
	}
	if err := ms.SaveMediaContent(ctx, sessionID, f.MessageID, f.Seq, base64.StdEncoding.EncodeToString(data), ""); err != nil {
		// Shown all the same: a later step downloads it again.
		a.Logger.Warn("A downloaded image was not kept in the store", "session", sessionID, "message_id", f.MessageID, "error", err)
	}
	return "[" + desc + " attached, shown below]", &models.Image{MimeType: mime, Data: data}
}

// transcribed transcribes a voice note or an audio file and keeps the
// transcript, so no later attempt pays for it again.
func (a *Activities) transcribed(ctx context.Context, ms MediaStore, sessionID string, f store.StoredMedia, audio []byte) (string, *models.Image) {
	desc := f.Describe()
	text, err := a.Media.Transcriber.Transcribe(ctx, audioName(f.Media), f.MimeType, audio)
	if err != nil {
		a.Logger.Warn("A voice note was not transcribed", "session", sessionID, "message_id", f.MessageID, "error", err)
		return "[" + desc + " attached, but it could not be transcribed]", nil
	}
	// Bounded as a message's text is.
	text = pipeline.ClipText(strings.TrimSpace(text))
	if text == "" {
		return "[" + desc + " attached, with no words in it]", nil
	}
	if err := ms.SaveMediaContent(ctx, sessionID, f.MessageID, f.Seq, "", text); err != nil {
		a.Logger.Warn("A transcript was not kept in the store", "session", sessionID, "message_id", f.MessageID, "error", err)
	}
	return "[" + desc + ", transcribed: " + text + "]", nil
}

// fetchProblem is why a file was not downloaded, in words for the model
// to pass on (never the platform's URL).
func fetchProblem(err error) string {
	if errors.Is(err, adapters.ErrFileTooLarge) {
		return "it is too large"
	}
	var perr *adapters.Error
	if errors.As(err, &perr) && perr.Kind == adapters.Permanent {
		return "the platform no longer has it"
	}
	return "the platform did not answer; it may work if sent again"
}

func isAudio(m pipeline.Media) bool {
	return m.Kind == "voice" || m.Kind == "audio" || strings.HasPrefix(m.MimeType, "audio/")
}

func isImage(m pipeline.Media) bool {
	return m.Kind == "photo" || strings.HasPrefix(m.MimeType, "image/")
}

// audioName is a file name the transcription API reads the format from.
func audioName(m pipeline.Media) string {
	if m.Name != "" {
		return m.Name
	}
	if ext, ok := map[string]string{"audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/wav": "wav", "audio/webm": "webm"}[m.MimeType]; ok {
		return "voice." + ext
	}
	return fmt.Sprintf("%s.ogg", m.Kind)
}

// withImages puts images on the prompt's user turn: the last user
// message, before the turn's tool rounds.
func withImages(p *models.Prompt, images []models.Image) {
	if len(images) == 0 {
		return
	}
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			p.Messages[i].Images = images
			return
		}
	}
}
