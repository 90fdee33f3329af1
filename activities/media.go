package activities

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads GIF, JPEG and PNG headers
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Media is how a turn shows the model the files of its messages. The
// gateway records each message's references in the store
// (adapters.MediaLog); the turn's activity downloads each file through
// its platform's adapters.FileFetcher, keeps a file's bytes or a voice
// note's transcript in the store (never in workflow history), and gives
// images to the model as image content, PDFs as document content, plain
// text files inline in the user's text and transcripts as text. A later
// attempt or step reads them from the store; an attempt cut short
// before it saved them downloads them again.
type Media struct {
	// MaxBytes bounds one file (REPLYFLOW_MEDIA_MAX_BYTES); a larger one
	// is refused, before the download where the platform gives the size.
	MaxBytes int64
	// Transcriber turns voice notes and audio into text; nil leaves them
	// lines of text.
	Transcriber models.Transcriber
	// TranscribeModel names the transcriber's model for the budgets'
	// prices (REPLYFLOW_TRANSCRIBE_MODEL).
	TranscribeModel string
	// Concurrent bounds the turns of this worker that hold files' bytes
	// at once (REPLYFLOW_MEDIA_CONCURRENT; zero is no bound): each holds
	// its files several times over (the bytes, their base64, the
	// request) until its model call returns. A turn past it waits for a
	// slot, its activity heartbeating meanwhile; a turn without files
	// never waits.
	Concurrent int
	slots      chan struct{}
	slotsOnce  sync.Once
	// SeesImages says which models take images; nil is
	// models.SeesImages' defaults per family.
	SeesImages func(model string) bool
	// ReadsPDFs says which models take PDF documents; nil is
	// models.ReadsPDFs' defaults per family.
	ReadsPDFs func(model string) bool
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

// maxTurnDocuments bounds the PDFs one model step is given, as
// maxTurnImages does images: each is up to MaxBytes and many pages.
const maxTurnDocuments = 5

// maxInlineTextBytes bounds the text of one text file put in the user's
// text; a longer file is cut there, and the model told so.
const maxInlineTextBytes = 64 << 10

// maxTurnTextBytes bounds the text files' text one model step is given,
// all files together, the newest messages' first; and so does half the
// prompt's token budget (REPLYFLOW_CONTEXT_TOKENS, at about 4 bytes a
// token), so that a file leaves room for the history, and later turns,
// which read it from the transcript, are not crowded out.
const maxTurnTextBytes = 4 * maxInlineTextBytes

// imageTypes are the image types the providers take; the type is sniffed
// from the bytes, never taken from the platform or the file's name.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// pdfType is a PDF's sniffed type.
const pdfType = "application/pdf"

// turnFiles are what a turn shows the model beside the user's text.
type turnFiles struct {
	images    []models.Image
	documents []models.Document
	// textLeft is what the turn's text files may still put in the
	// user's text, in bytes.
	textLeft int
}

// capabilities are the kinds of content the turn's model takes.
type capabilities struct {
	images, pdfs bool
}

// withMedia returns the request with each of its files' line in the text
// replaced by what the model is given instead (a transcript, a text
// file's text, a note that the image or document follows, or why the
// file is not shown), and the images and documents to show with the
// user turn. Without Media, a store that keeps files or recorded files,
// it returns the request as it is.
//
// A turn with files holds one of Media's slots from here until release,
// which the caller calls once its model call has returned.
//
// A model that takes no images declines a turn with one when a later
// model of its round takes them (the error's type is
// pipeline.ErrImagesUnsupported, which moves the step on to the next
// model); the last able one is asked, told the image is not shown.
func (a *Activities) withMedia(ctx context.Context, out adapters.Outbound, req pipeline.TurnRequest) (_ pipeline.TurnRequest, _ turnFiles, release func(), _ error) {
	release = func() {}
	ms, ok := a.Store.(MediaStore)
	if a.Media == nil || !ok || len(req.Messages) == 0 {
		return req, turnFiles{}, release, nil
	}
	sessionID := req.Session.WorkflowID()
	ids := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		ids[i] = m.MessageID
	}
	files, err := ms.MessageMedia(ctx, sessionID, ids)
	if err != nil {
		a.Logger.Warn("The files of the turn's messages were not read; the model sees them as lines of text", "session", sessionID, "turn_id", req.TurnID, "error", err)
		return req, turnFiles{}, release, nil
	}
	sees, reads := a.Media.SeesImages, a.Media.ReadsPDFs
	if sees == nil {
		sees = models.SeesImages
	}
	if reads == nil {
		reads = models.ReadsPDFs
	}
	if !sees(req.Model) && hasImage(files, req.Text) {
		if able := slices.IndexFunc(req.NextModels, sees); able >= 0 {
			return req, turnFiles{}, release, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("model %s takes no images and the turn of %s has one: %s, next in the chain, does (REPLYFLOW_IMAGE_MODELS names the models that do)",
					req.Model, sessionID, req.NextModels[able]), pipeline.ErrImagesUnsupported, nil)
		}
	}
	if len(files) > 0 {
		if release, err = a.Media.hold(ctx); err != nil {
			// The turn's context ended while it waited: it ends too.
			return req, turnFiles{}, func() {}, nil
		}
	}
	caps := capabilities{images: sees(req.Model), pdfs: reads(req.Model)}
	shown := turnFiles{textLeft: min(maxTurnTextBytes, a.budget()*2)}
	for i := len(ids) - 1; i >= 0; i-- {
		for _, f := range files[ids[i]] {
			line := f.Line()
			if !strings.Contains(req.Text, line) {
				continue // not in this turn's text (a command, or cut)
			}
			payer := audioPayer{key: req.Session, sender: req.Messages[i].SenderID}
			req.Text = strings.Replace(req.Text, line, a.fileFor(ctx, out, ms, payer, f, caps, &shown), 1)
		}
	}
	// The newest messages' files were taken first; the model reads them
	// in the order they were sent.
	slices.Reverse(shown.images)
	slices.Reverse(shown.documents)
	return req, shown, release, nil
}

// hasImage reports whether one of files is an image the turn's text
// shows (by its line).
func hasImage(files map[string][]store.StoredMedia, text string) bool {
	for _, fs := range files {
		for _, f := range fs {
			if isImage(f.Media) && strings.Contains(text, f.Line()) {
				return true
			}
		}
	}
	return false
}

// hold takes one of the worker's slots for a turn's files, waiting for
// one while ctx lasts; release gives it back (once, however often it is
// called).
func (m *Media) hold(ctx context.Context) (release func(), err error) {
	if m.Concurrent <= 0 {
		return func() {}, nil
	}
	m.slotsOnce.Do(func() { m.slots = make(chan struct{}, m.Concurrent) })
	select {
	case m.slots <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-m.slots }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fileFor is what the model is given of one file in place of its line;
// an image or document to show is added to shown.
func (a *Activities) fileFor(ctx context.Context, out adapters.Outbound, ms MediaStore, payer audioPayer, f store.StoredMedia, caps capabilities, shown *turnFiles) string {
	sessionID := payer.key.WorkflowID()
	desc := f.Describe()
	switch {
	case f.Transcript != "":
		return "[" + desc + ", transcribed: " + f.Transcript + "]"
	case isAudio(f.Media):
		if a.Media.Transcriber == nil {
			return f.Line()
		}
	case isImage(f.Media) && !caps.images:
		// Not downloaded: the platform says it is an image.
		return "[" + desc + " attached, not shown: this model does not take images]"
	case f.MimeType == pdfType && !caps.pdfs:
		return "[" + desc + " attached, not shown: this model does not take PDF documents]"
	case !isImage(f.Media) && f.Kind != "document":
		return f.Line() // video and the rest: nothing a model takes
	}
	if f.Content != "" {
		if data, err := base64.StdEncoding.DecodeString(f.Content); err == nil {
			if isAudio(f.Media) {
				// Kept by the gateway (a web chat upload), not yet
				// transcribed: a transcript, once kept, is read above.
				return a.transcribed(ctx, ms, payer, f, data)
			}
			return a.present(ctx, ms, sessionID, f, data, false, caps, shown)
		}
	}
	fetcher, ok := out.(adapters.FileFetcher)
	if !ok {
		return f.Line()
	}
	data, err := fetcher.FetchFile(ctx, f.Media, a.Media.MaxBytes)
	if err != nil {
		a.Logger.Warn("A file of a message was not downloaded", "session", sessionID, "message_id", f.MessageID, "kind", f.Kind, "error", err)
		return "[" + desc + " attached, but it could not be downloaded: " + fetchProblem(err) + "]"
	}
	if isAudio(f.Media) {
		return a.transcribed(ctx, ms, payer, f, data)
	}
	return a.present(ctx, ms, sessionID, f, data, true, caps, shown)
}

// present is what the model is given of a file's bytes, by their
// sniffed type: an image or a PDF to show, a text file's text, or why
// it is not shown. Downloaded bytes (fresh) of a type the model is given
// are kept in the store.
func (a *Activities) present(ctx context.Context, ms MediaStore, sessionID string, f store.StoredMedia, data []byte, fresh bool, caps capabilities, shown *turnFiles) string {
	desc := f.Describe()
	mime := http.DetectContentType(data)
	keep := func() {
		if !fresh {
			return
		}
		if err := ms.SaveMediaContent(ctx, sessionID, f.MessageID, f.Seq, base64.StdEncoding.EncodeToString(data), ""); err != nil {
			// Shown all the same: a later step downloads it again.
			a.Logger.Warn("A downloaded file was not kept in the store", "session", sessionID, "message_id", f.MessageID, "error", err)
		}
	}
	switch {
	case imageTypes[mime]:
		if !caps.images {
			return "[" + desc + " attached, not shown: this model does not take images]"
		}
		if !readableImage(data, mime) {
			return "[" + desc + " attached, not shown: its bytes start as " + mime + " but are no readable image (a broken or cut-off file)]"
		}
		if len(shown.images) >= maxTurnImages {
			return fmt.Sprintf("[%s attached, not shown: a turn shows at most %d images]", desc, maxTurnImages)
		}
		keep()
		shown.images = append(shown.images, models.Image{MimeType: mime, Data: data})
		return "[" + desc + " attached, shown below]"
	case isImage(f.Media):
		return "[" + desc + " attached, but it is not an image the model can take (its bytes are " + mime + ")]"
	case mime == pdfType:
		if !caps.pdfs {
			return "[" + desc + " attached, not shown: this model does not take PDF documents]"
		}
		if len(shown.documents) >= maxTurnDocuments {
			return fmt.Sprintf("[%s attached, not shown: a turn shows at most %d PDF documents]", desc, maxTurnDocuments)
		}
		keep()
		shown.documents = append(shown.documents, models.Document{Name: f.Name, MimeType: pdfType, Data: data})
		return "[" + desc + " attached, shown below as a document]"
	case strings.HasPrefix(mime, "text/plain") && utf8.Valid(data):
		if shown.textLeft <= 0 {
			return "[" + desc + " attached, not shown: the turn's other text files take all the room a turn gives files]"
		}
		keep()
		text, note := clipFileText(data, min(maxInlineTextBytes, shown.textLeft))
		shown.textLeft -= len(text)
		name := f.Name
		if name == "" {
			name = "unnamed"
		}
		return "[" + desc + " attached; its text follows, as the user sent it" + note + "]\n" +
			"<<<file " + strconv.Quote(name) + " sent by the user\n" + text + "\n>>>end of file " + strconv.Quote(name)
	}
	return "[" + desc + " attached, but it is not a file the model can take: images, PDFs and plain text are (its bytes are " + mime + ")]"
}

// readableImage is whether an image's header reads as the image its
// sniffed type says: a broken one is named as such to the model, rather
// than sent to a provider that refuses the whole request for it. Only
// the header is read (image.DecodeConfig): nothing is decompressed or
// rendered. WebP has no decoder here, and goes as it is.
func readableImage(data []byte, mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif":
		_, format, err := image.DecodeConfig(bytes.NewReader(data))
		return err == nil && "image/"+format == mime
	}
	return true
}

// clipFileText is a text file's text cut to at most limit bytes on a
// character boundary, and the note that says so.
func clipFileText(data []byte, limit int) (string, string) {
	if len(data) <= limit {
		return string(data), ""
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return string(data[:cut]), fmt.Sprintf(" (its first %d of %d bytes)", cut, len(data))
}

// audioPayer is whose budgets a transcription draws on: the turn's
// session, and the sender of the message the audio came with.
type audioPayer struct {
	key    pipeline.SessionKey
	sender string
}

// callTranscribe is the kind the budgets count a transcription as.
const callTranscribe = "transcribe"

// audioBytesPerToken prices audio by its size, since its length is not
// known before it is transcribed and the provider bills by length: the
// lowest bitrate a voice note uses (Opus at about 6 kbit/s, 750 bytes a
// second) at 10 tokens a second. A long, near-silent recording, which
// yields almost no words, so costs what its length costs; an ordinary
// voice note (32 kbit/s) counts less than its length would.
const audioBytesPerToken = 75

// audioTokens is what a transcription of audio counts against the
// budgets.
func audioTokens(audio []byte) int64 { return int64(len(audio)/audioBytesPerToken) + 1 }

// transcribed transcribes a voice note or an audio file and keeps the
// transcript, so no later attempt pays for it again. Like every model
// call, it is refused once a budget of its chat or sender is spent, and
// counted against them.
func (a *Activities) transcribed(ctx context.Context, ms MediaStore, payer audioPayer, f store.StoredMedia, audio []byte) string {
	sessionID := payer.key.WorkflowID()
	desc := f.Describe()
	if err := a.Spend.admitCall(ctx, payer.key, payer.sender, "transcribing a voice note"); err != nil {
		a.Logger.Info("A voice note was not transcribed: a budget is spent", "session", sessionID, "message_id", f.MessageID, "error", err)
		return "[" + desc + " attached, not transcribed: a budget of this chat is spent]"
	}
	text, err := a.Media.Transcriber.Transcribe(ctx, audioName(f.Media), f.MimeType, audio)
	if err != nil {
		a.Logger.Warn("A voice note was not transcribed", "session", sessionID, "message_id", f.MessageID, "error", err)
		return "[" + desc + " attached, but it could not be transcribed]"
	}
	a.Spend.counted(ctx, a.Logger, payer.key, payer.sender, a.Media.TranscribeModel, callTranscribe,
		pipeline.Usage{InputTokens: audioTokens(audio)}, func() int64 { return audioTokens(audio) })
	// Bounded as a message's text is.
	text = pipeline.ClipText(strings.TrimSpace(text))
	if text == "" {
		return "[" + desc + " attached, with no words in it]"
	}
	if err := ms.SaveMediaContent(ctx, sessionID, f.MessageID, f.Seq, "", text); err != nil {
		a.Logger.Warn("A transcript was not kept in the store", "session", sessionID, "message_id", f.MessageID, "error", err)
	}
	return "[" + desc + ", transcribed: " + text + "]"
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

// audioName is a file name the transcription API reads the format from:
// the file's own when it ends in a format the API knows, else the name
// (or "voice") with the extension of its type, as a user's file may be
// named without one ("memo") or with another.
func audioName(m pipeline.Media) string {
	if transcribable[strings.ToLower(strings.TrimPrefix(path.Ext(m.Name), "."))] {
		return m.Name
	}
	ext, ok := map[string]string{"audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/wav": "wav", "audio/webm": "webm", "audio/flac": "flac"}[m.MimeType]
	if !ok {
		ext = "ogg"
	}
	base := strings.TrimSuffix(m.Name, path.Ext(m.Name))
	if base == "" {
		base = "voice"
	}
	return base + "." + ext
}

// transcribable are the file extensions OpenAI's transcription API reads
// a format from.
var transcribable = map[string]bool{"flac": true, "m4a": true, "mp3": true, "mp4": true, "mpeg": true, "mpga": true, "oga": true, "ogg": true, "wav": true, "webm": true}

// withFiles puts a turn's images and documents on the prompt's user
// turn: the last user message, before the turn's tool rounds.
func withFiles(p *models.Prompt, files turnFiles) {
	if len(files.images) == 0 && len(files.documents) == 0 {
		return
	}
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			p.Messages[i].Images = files.images
			p.Messages[i].Documents = files.documents
			return
		}
	}
}
