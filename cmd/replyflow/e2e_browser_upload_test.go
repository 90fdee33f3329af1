package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
)

// fileModel answers each turn with what it was given of the user's
// files: the names of the documents, and the user's text.
type fileModel struct {
	mu   sync.Mutex
	seen []string
}

func (*fileModel) Name() string { return "test/files" }

func (m *fileModel) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	var user models.Message
	for _, msg := range p.Messages {
		if msg.Role == "user" {
			user = msg
		}
	}
	var docs []string
	for _, d := range user.Documents {
		docs = append(docs, fmt.Sprintf("%s %d bytes", d.Name, len(d.Data)))
	}
	m.mu.Lock()
	m.seen = append(m.seen, user.Text)
	m.mu.Unlock()
	return models.Completion{Text: "documents: " + strings.Join(docs, ", ")}, nil
}

func (m *fileModel) texts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

// The page uploads a picked file and a pasted one, says why a refused
// one was not sent (and sends its text alone), and shows the files'
// names again after a reload.
func TestWebChatPageUploadsPickedAndPastedFiles(t *testing.T) {
	b := startBrowser(t)
	cfg := testConfig(t)
	cfg.Media = true
	s := startStack(t, cfg)
	model := &fileModel{}
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = fixedModels{model}
		acts.Media.ReadsPDFs = func(string) bool { return true }
	})
	chat := uniqueChat("browser-upload")
	b.do("open the page", chromedp.Navigate(s.baseURL+"/#"+chat))
	b.waitFor("that it is connected", `document.getElementById("status").textContent === "connected"`)

	pdf := filepath.Join(t.TempDir(), "report.pdf")
	require.NoError(t, os.WriteFile(pdf, []byte("%PDF-1.7\n"+strings.Repeat("page ", 400)), 0o644))
	b.do("pick a PDF", chromedp.SetUploadFiles("#file", []string{pdf}))
	b.waitFor("the picked file beside the box", `document.getElementById("pending").textContent === "📎 report.pdf"`)
	b.do("send it with a caption", chromedp.SetValue("#text", "summarise this"), chromedp.Click(`button[type="submit"]`))
	b.waitFor("the file's name in the user's message", `document.querySelector("#log .msg.user .upload")?.textContent === "📎 report.pdf (2 KiB)"`)
	b.waitFor("the answer", `[...document.querySelectorAll("#log .msg.bot .body")].some((e) => e.textContent.trim() === "documents: report.pdf 2009 bytes")`)
	assert.Equal(t, "", eval[string](b, `document.getElementById("pending").textContent`), "the file went with the message")

	paste := func(name, content, kind string) {
		t.Helper()
		require.True(t, eval[bool](b, fmt.Sprintf(`(() => {
			const dt = new DataTransfer();
			dt.items.add(new File([%q], %q, { type: %q }));
			document.getElementById("text").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
			return true;
		})()`, content, name, kind)))
		b.waitFor("the pasted file beside the box", fmt.Sprintf(`document.getElementById("pending").textContent === %q`, "📎 "+name))
		b.do("send the pasted file", chromedp.Click(`button[type="submit"]`))
	}
	paste("notes.txt", "buy milk\ncall Bob", "text/plain")
	b.waitFor("the answer to the text file", `document.querySelectorAll("#log .msg.bot").length === 2`)
	texts := model.texts()
	require.Len(t, texts, 2)
	assert.Contains(t, texts[1], `<<<file "notes.txt" sent by the user`+"\nbuy milk\ncall Bob\n")

	paste("logo.svg", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, "image/svg+xml")
	b.waitFor("why the SVG was not sent", `[...document.querySelectorAll("#log .msg.user .meta")].some((e) => e.textContent.startsWith("not sent: the file's bytes are image/svg+xml"))`)
	assert.Len(t, model.texts(), 2, "a refused file reaches no one")

	// A refused file with text: the file is named as not sent, and the
	// text is answered on its own.
	b.do("type a caption", chromedp.SetValue("#text", "what about this logo?"))
	paste("logo2.svg", `<svg xmlns="http://www.w3.org/2000/svg"></svg>`, "image/svg+xml")
	b.waitFor("why the file was not sent", `[...document.querySelectorAll("#log .msg.user .meta")].some((e) => e.textContent.startsWith("file not sent: the file's bytes are image/svg+xml"))`)
	b.waitFor("the answer to the text", `document.querySelectorAll("#log .msg.bot").length === 3`)
	texts = model.texts()
	require.Len(t, texts, 3)
	assert.Contains(t, texts[2], "what about this logo?")
	assert.NotContains(t, texts[2], "logo2.svg", "the refused file reaches no one")

	b.do("reload the page", chromedp.Reload())
	b.waitFor("the history", `document.querySelectorAll("#log .msg.bot").length === 3`)
	assert.Equal(t, []string{"📎 report.pdf (2 KiB)", "📎 notes.txt (1 KiB)"},
		eval[[]string](b, `[...document.querySelectorAll("#log .msg.user .upload")].map((e) => e.textContent)`), "the files' names, from the store")
	assert.Empty(t, b.pageErrors(), "the page threw")
}

// The page's 🎤 records a voice note from the microphone (Chromium's fake
// one) until clicked again, attaches it as voice-note.webm, and sends it
// with the caption; the worker has it transcribed, and the model reads
// the transcript.
func TestWebChatPageRecordsAndSendsAVoiceNote(t *testing.T) {
	b := startBrowser(t, chromedp.Flag("use-fake-device-for-media-stream", true), chromedp.Flag("use-fake-ui-for-media-stream", true))
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")}
	cfg := testConfig(t)
	cfg.Media, cfg.TranscribeModel = true, "whisper-1"
	s := startStack(t, cfg)
	model := &fileModel{}
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = fixedModels{model}
		acts.Media.Transcriber = models.NewOpenAITranscriber(cfg.TranscribeModel, opts...)
	})
	oa.SetTranscript("hello from the microphone")
	chat := uniqueChat("browser-voice")
	b.do("open the page", chromedp.Navigate(s.baseURL+"/#"+chat))
	b.waitFor("that it is connected", `document.getElementById("status").textContent === "connected"`)
	b.waitFor("the 🎤 button", `!document.getElementById("record").hidden`)

	// A click from the page's script: chromedp.Click on this button does
	// not return in headless Chromium with the fake microphone, and the
	// page's handler is the same either way.
	click := func(id string) { require.True(t, eval[bool](b, `(document.getElementById("`+id+`").click(), true)`)) }
	click("record")
	b.waitFor("a second recorded", `/^🎤 recording 0:0[1-9]$/.test(document.getElementById("pending").textContent)`)
	assert.Equal(t, "true", eval[string](b, `document.getElementById("record").getAttribute("aria-pressed")`))
	click("record")
	b.waitFor("the recording attached", `document.getElementById("pending").textContent === "📎 voice-note.webm"`)
	b.do("send it with a caption", chromedp.SetValue("#text", "listen to this"), chromedp.Click(`button[type="submit"]`))
	b.waitFor("the file's name in the user's message", `document.querySelector("#log .msg.user .upload")?.textContent.startsWith("📎 voice-note.webm (")`)
	b.waitFor("the answer", `document.querySelectorAll("#log .msg.bot").length === 1`)

	got := oa.Transcriptions()
	require.Len(t, got, 1)
	assert.Equal(t, "voice-note.webm", got[0].FileName)
	assert.True(t, bytes.HasPrefix(got[0].Audio, []byte("\x1a\x45\xdf\xa3")), "a WebM recording")
	texts := model.texts()
	require.Len(t, texts, 1)
	assert.Contains(t, texts[0], "listen to this")
	assert.Contains(t, texts[0], `[audio "voice-note.webm" (audio/webm), transcribed: hello from the microphone]`)
	assert.Empty(t, b.pageErrors(), "the page threw")
}
