package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEnvelope(t *testing.T) {
	at := time.Date(2026, 11, 21, 21, 13, 0, 0, time.UTC)
	assert.Equal(t, "[webchat Sat 2026-11-21 21:13 UTC] hi", Envelope(EnvelopeFields{Channel: "webchat", Sender: "alice", At: at}, "hi"),
		"no sender label in a direct chat, no elapsed time for the first message")
	assert.Equal(t, "[telegram alice +3m Sat 2026-11-21 21:13 UTC] hi",
		Envelope(EnvelopeFields{Channel: "telegram", Sender: "alice", Group: true, At: at, Prev: at.Add(-3 * time.Minute)}, "hi"))
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err == nil {
		assert.Equal(t, "[webchat +2d Sat 2026-11-21 22:13 CET] x",
			Envelope(EnvelopeFields{Channel: "webchat", At: at, Prev: at.Add(-50 * time.Hour), Loc: berlin}, "x"))
	}
	assert.Equal(t, "45s", compactDuration(45*time.Second))
	assert.Equal(t, "5h", compactDuration(5*time.Hour+20*time.Minute))
}

func TestStripEnvelope(t *testing.T) {
	assert.Equal(t, "hi [there] ok", StripEnvelope("[webchat Sat 2026-11-21 21:13 UTC] hi [there] ok"))
	assert.Equal(t, "no envelope", StripEnvelope("no envelope"))
}

func TestFitBudget(t *testing.T) {
	texts := []string{"aaaaaaaaaaaa", "bbbbbbbb", "cccc"} // 4, 3 and 2 tokens
	assert.Equal(t, 3, FitBudget(texts, 100, 0))
	assert.Equal(t, 2, FitBudget(texts, 5, 0), "the newest that fit")
	assert.Equal(t, 0, FitBudget(texts, 5, 4), "reserved tokens come first")
}
