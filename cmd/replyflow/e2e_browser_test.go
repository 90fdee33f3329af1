package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/webchat"
	"github.com/replyflow/replyflow/pipeline"
)

// The web chat page in a real browser (Debian's Chromium, which `make
// test` installs), against the real gateway and worker: what a person
// sees, and what no reply may do.

// browserPath is the Chromium the test drives: REPLYFLOW_TEST_CHROMIUM,
// else the first of the usual names on PATH.
func browserPath(t *testing.T) string {
	if os.Getenv("REPLYFLOW_TEST_BROWSER") == "off" {
		t.Skip("SKIPPED: the web chat page in a real browser, because REPLYFLOW_TEST_BROWSER=off")
	}
	if path := os.Getenv("REPLYFLOW_TEST_CHROMIUM"); path != "" {
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("the browser test needs Chromium: `make test` installs it (apt-get install chromium), or set REPLYFLOW_TEST_CHROMIUM to a Chromium or Chrome binary, or REPLYFLOW_TEST_BROWSER=off to skip it")
	return ""
}

// browser is one headless Chromium with a fresh profile, and the page
// errors it reported.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// startBrowser starts Chromium with the usual flags, and extra ones a
// test needs (a fake microphone).
func startBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browserPath(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(390, 844)}, extra...)...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	// The first action starts the browser; the events are read after.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)), "start Chromium")
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.errors = append(b.errors, ev.ExceptionDetails.Text+" "+describe(ev.ExceptionDetails.Exception))
			b.mu.Unlock()
		}
	}()
	return b
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	return o.Description
}

func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...), "%s (page errors: %v)", what, b.pageErrors())
}

// screenshot saves the page as name.png in REPLYFLOW_TEST_SCREENSHOTS,
// when set, for a person to look at.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("REPLYFLOW_TEST_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// eval runs expression in the page.
func eval[T any](b *browser, expression string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expression))
	require.NoError(b.t, err, "%s (page errors: %v)", expression, b.pageErrors())
	return v
}

// waitFor waits until expression is true in the page, for up to 30 s.
func (b *browser) waitFor(what, expression string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !eval[bool](b, "!!("+expression+")") {
		if time.Now().After(deadline) {
			b.t.Fatalf("the page never showed %s (%s); page errors: %v; log: %s", what, expression, b.pageErrors(),
				eval[string](b, `document.getElementById("log").innerHTML`))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// markdownModel streams a first line, waits for the test, then answers
// Markdown with a script and an onerror payload in it.
type markdownModel struct {
	started chan struct{}
	release chan struct{}
}

const (
	previewText = "Working on **it**"
	answerText  = "Here is **bold**, a list:\n\n- first\n- second\n\n```go\nfmt.Println(\"<b>hi</b>\")\n```\n\n" +
		"<script>window.replyflowPwned = 'script'</script>\n\n<img src=x onerror=\"window.replyflowPwned = 'onerror'\">\n\n" +
		"[click](javascript:window.replyflowPwned='link')"
)

func (*markdownModel) Name() string { return "test/markdown" }

func (m *markdownModel) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	return m.Stream(ctx, p, func(string) {})
}

func (m *markdownModel) Stream(ctx context.Context, _ models.Prompt, onText func(string)) (models.Completion, error) {
	onText(previewText)
	select {
	case m.started <- struct{}{}:
	default:
	}
	select {
	case <-m.release:
	case <-ctx.Done():
		return models.Completion{}, ctx.Err()
	}
	// As a provider's stream does, the answer is the text written.
	onText(answerText)
	return models.Completion{Text: answerText}, nil
}

// reactionsOf records, in the page, each reaction the first user message
// shows, in order ("" when none), so that a short-lived one is seen too.
const recordReactions = `(() => {
	window.seenReactions = [];
	const look = () => {
		const r = document.querySelector("#log .msg.user > .reaction");
		const now = r ? r.textContent : "";
		if (window.seenReactions[window.seenReactions.length - 1] !== now) window.seenReactions.push(now);
	};
	new MutationObserver(look).observe(document.getElementById("log"), { subtree: true, childList: true, characterData: true });
	return true;
})()`

func TestWebChatPageInARealBrowser(t *testing.T) {
	b := startBrowser(t)
	cfg := testConfig(t)
	s := startStack(t, cfg)
	model := &markdownModel{started: make(chan struct{}, 1), release: make(chan struct{})}
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = fixedModels{model}
		acts.Streaming = activities.Streaming{Mode: pipeline.StreamPreview, Pacing: pipeline.PreviewPacing{FirstAfter: 100 * time.Millisecond, Every: 200 * time.Millisecond}}
	})
	chat := uniqueChat("browser")
	page := s.baseURL + "/#" + chat
	b.do("open the page", chromedp.Navigate(page))
	b.waitFor("that it is connected", `document.getElementById("status").textContent === "connected"`)
	require.True(t, eval[bool](b, recordReactions))

	// At 390 px the header is at most two rows.
	rows := eval[int](b, `(() => {
		const boxes = [...document.querySelectorAll("header > *")].filter((e) => e.offsetParent).map((e) => e.getBoundingClientRect()).sort((a, b) => a.top - b.top);
		let rows = 0, bottom = -Infinity;
		for (const r of boxes) if (r.top >= bottom - 1) { rows++; bottom = r.bottom; } else bottom = Math.max(bottom, r.bottom);
		return rows;
	})()`)
	b.screenshot("connected")
	assert.LessOrEqual(t, rows, 2, "the header's rows at 390 px")

	b.do("send a message", chromedp.SetValue("#text", "hello **page**"), chromedp.Click(`button[type="submit"]`))
	select {
	case <-model.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never asked")
	}
	b.waitFor("the streamed preview", `document.querySelector("#log .msg.bot .body strong")?.textContent === "it"`)
	b.waitFor("✍️ while the model writes", `document.querySelector("#log .msg.user > .reaction")?.textContent === "✍️"`)
	// The badge is wholly in view, and nothing covers it.
	assert.True(t, eval[bool](b, `(() => {
		const badge = document.querySelector("#log .msg.user > .reaction");
		const r = badge.getBoundingClientRect();
		const log = document.getElementById("log").getBoundingClientRect();
		const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		return r.top >= log.top && r.bottom <= log.bottom && r.left >= log.left && r.right <= log.right && (top === badge || badge.contains(top));
	})()`), "the reaction badge is in view and uncovered")

	b.screenshot("preview")
	close(model.release)
	b.waitFor("the answer's Markdown", `document.querySelectorAll("#log .msg.bot li").length === 2 && document.querySelector("#log .msg.bot pre code")`)
	b.waitFor("the reaction cleared", `window.seenReactions.at(-1) === "" && window.seenReactions.includes("✅")`)
	assert.Equal(t, []string{"", "👀", "✍️", "✅", ""}, eval[[]string](b, `window.seenReactions`), "the reaction lifecycle")
	assertRendered(t, b)

	// Files the bot sends: a raster image shows inline, an SVG (which
	// could carry a script) is only offered as a download.
	bot, err := webchat.NewClient(s.baseURL, webchatOf(cfg).BotToken, nil)
	require.NoError(t, err)
	session := pipeline.SessionKey{Channel: webchat.Channel, Chat: chat}
	var picture bytes.Buffer
	require.NoError(t, png.Encode(&picture, image.NewRGBA(image.Rect(0, 0, 8, 8))))
	for i, f := range []adapters.File{
		{Name: "chart.png", ContentType: "image/png", Data: picture.Bytes()},
		{Name: "logo.svg", ContentType: "image/svg+xml", Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="window.replyflowPwned='svg'"><script>window.replyflowPwned='svg'</script></svg>`)},
	} {
		_, err := bot.SendFile(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: fmt.Sprintf("file-%d", i), Text: "a file"}, f)
		require.NoError(t, err)
	}
	assertFiles := func() {
		t.Helper()
		b.waitFor("the files", `document.querySelector("#log img.file") && document.querySelector("#log a.file")`)
		b.waitFor("the image loaded", `document.querySelector("#log img.file").naturalWidth === 8`)
		assert.Equal(t, "logo.svg", eval[string](b, `document.querySelector("#log a.file").download`))
		assert.Equal(t, "undefined", eval[string](b, `typeof window.replyflowPwned`), "the SVG's script ran")
	}
	assertFiles()
	b.screenshot("answered")

	// The gateway restarts; the page, reloaded, shows the chat from the store.
	s.stopGateway()
	s.restartGateway()
	b.do("reload the page", chromedp.Reload())
	b.waitFor("the history after a restart", `document.querySelector("#log .msg.bot pre code")`)
	assert.Equal(t, "hello **page**", eval[string](b, `document.querySelector("#log .msg.user .body").textContent`), "the user's message, as typed")
	assert.Equal(t, 3, eval[int](b, `document.querySelectorAll("#log .msg.bot").length`), "the answer (its preview and final edit one message) and the two files")
	assert.Equal(t, 0, eval[int](b, `document.querySelectorAll("#log .reaction").length`), "the cleared reaction stays cleared")
	assertRendered(t, b)
	assertFiles()

	// Another gateway on the same store serves the same chat.
	other := startStackOn(t, cfg, s.client)
	b.do("open the page on another gateway", chromedp.Navigate(other.baseURL+"/#"+chat))
	b.waitFor("the history on another gateway", `document.querySelector("#log .msg.bot pre code")`)
	assertRendered(t, b)
	assert.Empty(t, b.pageErrors(), "the page threw")
}

// assertRendered checks the bot's answer as the page shows it: Markdown
// rendered, and nothing of the reply's scripts run or left in the page.
func assertRendered(t *testing.T, b *browser) {
	t.Helper()
	assert.Equal(t, "bold", eval[string](b, `document.querySelector("#log .msg.bot .body strong").textContent`))
	assert.Equal(t, []string{"first", "second"}, eval[[]string](b, `[...document.querySelectorAll("#log .msg.bot li")].map((li) => li.textContent)`))
	assert.Equal(t, `fmt.Println("<b>hi</b>")`+"\n", eval[string](b, `document.querySelector("#log .msg.bot pre code").textContent`), "the code block, as text")
	assert.Equal(t, "undefined", eval[string](b, `typeof window.replyflowPwned`), "a script in the reply ran")
	assert.Zero(t, eval[int](b, `document.querySelectorAll("#log .body script, #log .body img, #log [onerror], #log a[href^='javascript']").length`),
		"the reply's HTML reached the page: %s", eval[string](b, `document.querySelector("#log .msg.bot .body").innerHTML`))
}
