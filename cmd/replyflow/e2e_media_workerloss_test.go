package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// releaseOnce is a hold's release channel and its closing, safe to call
// more than once (the test's cleanup closes it too, so no held request
// outlives a failed test).
func releaseOnce(t *testing.T) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return ch, release
}

// answeredOnce waits until the turn on msg is over (its reaction went
// through ✅ and was cleared) and checks that the chat holds one bot
// message, the answer: no failure notice, no second answer.
func answeredOnce(t *testing.T, r *workerLossRig, msg int, answer string) {
	t.Helper()
	waitOnFake(t, r.fake.WaitFor, "the answer", func() bool { return slicesContains(sentTexts(r.fake, r.chat), answer) })
	waitOnFake(t, r.fake.WaitFor, "the message's reaction cleared", cleared(r.fake, r.chat, msg))
	got := botMessages(r.fake, r.chat)
	require.Len(t, got, 1, "one message, the answer: %q", sentTexts(r.fake, r.chat))
	assert.Equal(t, answer, got[0].Text)
}

// A worker killed (SIGKILL, real processes) while it downloads a PDF a
// user sent: the next worker downloads it again and the message is
// answered once, the model asked once, with the document.
func TestAWorkerKilledMidDownloadAnswersOnceAfterTheRestart(t *testing.T) {
	t.Parallel()
	const answer = "A quarterly report, read by the second worker."
	r := newWorkerLossRigWith(t, "media-download", map[string]string{"MODEL": "openai/gpt-4o", "MEDIA": "true"}, modeltest.Step{Text: answer})
	hold, release := releaseOnce(t)
	r.fake.HoldDownloads(hold)
	pdf := testPDF("workerloss-pdf-bytes.", 20<<10)
	r.fake.AddFile("pdf-workerloss", pdf)

	worker := r.startWorker(1)
	msg := r.fake.AddMessage(telegramtest.Incoming{Chat: r.chat, From: tgAlice, Caption: "what is this?",
		Document: &telegramtest.Document{FileID: "pdf-workerloss", FileName: "q3.pdf", MimeType: "application/pdf"}})
	waitOnFake(t, r.fake.WaitFor, "the first worker's download", func() bool { return r.fake.Downloads() == 1 })
	worker.Kill()
	release()
	r.startWorker(2)

	answeredOnce(t, r, msg, answer)
	assert.Equal(t, 2, r.fake.Downloads(), "the file was downloaded again by the second worker")
	reqs := r.model.Requests()
	require.Len(t, reqs, 1, "the model was asked once, by the second worker")
	assertOneDocument(t, modeltest.Document{Name: "q3.pdf", MediaType: "application/pdf", Data: pdf, Part: "file"}, reqs[0].Documents)
	assert.Contains(t, reqs[0].Messages[len(reqs[0].Messages)-1], "what is this?")
}

// A worker killed (SIGKILL, real processes) while a voice note is
// transcribed: the next worker downloads and transcribes it again, and
// the message is answered once, the model asked once, with the
// transcript.
func TestAWorkerKilledMidTranscriptionAnswersOnceAfterTheRestart(t *testing.T) {
	t.Parallel()
	const answer = "Noted: water the plants."
	r := newWorkerLossRigWith(t, "media-transcribe", map[string]string{"MEDIA": "true", "TRANSCRIBE_MODEL": "whisper-1"}, modeltest.Step{Text: answer})
	hold, release := releaseOnce(t)
	r.model.HoldTranscriptions(hold)
	r.model.SetTranscript("remind me to water the plants")
	r.fake.AddFile("voice-workerloss", []byte("OggS a voice note"))

	worker := r.startWorker(1)
	msg := r.fake.AddMessage(telegramtest.Incoming{Chat: r.chat, From: tgAlice, Voice: "voice-workerloss"})
	require.Eventually(t, func() bool { return len(r.model.Transcriptions()) == 1 }, time.Minute, 10*time.Millisecond,
		"the first worker's transcription reached the fake")
	worker.Kill()
	release()
	r.startWorker(2)

	answeredOnce(t, r, msg, answer)
	transcriptions := r.model.Transcriptions()
	require.Len(t, transcriptions, 2, "the voice note was transcribed again by the second worker")
	for _, tr := range transcriptions {
		assert.Equal(t, "whisper-1", tr.Model)
		assert.Equal(t, []byte("OggS a voice note"), tr.Audio)
	}
	assert.Equal(t, 2, r.fake.Downloads(), "the audio was downloaded again: only its transcript is kept")
	reqs := r.model.Requests()
	require.Len(t, reqs, 1, "the model was asked once, by the second worker")
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.True(t, strings.Contains(last, "transcribed: remind me to water the plants"), "the model read the transcript: %q", last)
}
