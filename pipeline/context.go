package pipeline

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// EnvelopeFields describe one user message for the model.
type EnvelopeFields struct {
	Channel string
	Sender  string // shown in groups only
	Group   bool
	At      time.Time
	Prev    time.Time // the previous message's time; zero for none
	Loc     *time.Location
}

// Envelope wraps a user message as the model sees it:
// "[web alice +3m Sat 2026-11-21 21:13 UTC] text".
func Envelope(f EnvelopeFields, text string) string {
	loc := f.Loc
	if loc == nil {
		loc = time.UTC
	}
	parts := []string{f.Channel}
	if f.Group && f.Sender != "" {
		parts = append(parts, f.Sender)
	}
	if !f.Prev.IsZero() && f.At.After(f.Prev) {
		parts = append(parts, "+"+compactDuration(f.At.Sub(f.Prev)))
	}
	parts = append(parts, f.At.In(loc).Format("Mon 2006-01-02 15:04 MST"))
	return "[" + strings.Join(parts, " ") + "] " + text
}

// StripEnvelope returns the text of an enveloped message.
func StripEnvelope(s string) string {
	if strings.HasPrefix(s, "[") {
		if _, text, ok := strings.Cut(s, "] "); ok {
			return text
		}
	}
	return s
}

func compactDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// EstimateTokens is a rough token count (four characters a token) for
// keeping a prompt within a model's budget without a tokenizer.
func EstimateTokens(s string) int { return utf8.RuneCountInString(s)/4 + 1 }

// FitBudget returns how many of the newest texts fit in budget tokens
// together with reserved ones; texts are oldest first.
func FitBudget(texts []string, budget, reserved int) int {
	used, n := reserved, 0
	for i := len(texts) - 1; i >= 0; i-- {
		used += EstimateTokens(texts[i])
		if used > budget {
			break
		}
		n++
	}
	return n
}

// SystemContext is the part of the system prompt that says where the
// conversation happens and when.
func SystemContext(channel, chat string, group bool, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	kind := "a direct conversation"
	if group {
		kind = "a group chat; messages are labelled with their sender"
	}
	return fmt.Sprintf("You are replying on %s, in chat %s (%s). User messages start with [channel, time since the previous message, date and time]. It is now %s.",
		channel, chat, kind, now.In(loc).Format("Monday 2006-01-02 15:04 MST"))
}
