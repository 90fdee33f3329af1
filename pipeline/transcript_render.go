package pipeline

import (
	"fmt"
	"strings"
	"time"
)

// TranscriptLine is one transcript message as /export shows it.
type TranscriptLine struct {
	// Who is the sender's name for a user message, "assistant" for the
	// agent's.
	Who  string
	At   time.Time
	Body string
}

// RenderTranscriptMarkdown is /export's document: a heading for the
// session, then each message under a heading of its own (who, when) with
// its body quoted line by line, so nothing in a body (a heading, a
// fence, a list) can change the document's structure. omitted says how
// many older messages did not fit.
func RenderTranscriptMarkdown(session string, lines []TranscriptLine, omitted int, exportedAt time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Conversation %s\n\nExported %s · %d message(s)", oneLine(session), exportedAt.UTC().Format("2006-01-02 15:04 MST"), len(lines))
	if omitted > 0 {
		fmt.Fprintf(&b, " (the %d older one(s) are left out; `replyflow export` prints more)", omitted)
	}
	b.WriteString("\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "\n### %s · %s\n\n", oneLine(l.Who), l.At.UTC().Format("2006-01-02 15:04 MST"))
		for _, line := range strings.Split(strings.ToValidUTF8(l.Body, "\uFFFD"), "\n") {
			b.WriteString(strings.TrimRight("> "+line, " ") + "\n")
		}
	}
	return b.String()
}

// RenderContext is the /context answer: what the next prompt holds, in
// numbers only (it is shown in the chat and kept in history).
func RenderContext(r ContextReport, req ContextRequest, model string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Next prompt (%s), budget %d tokens:\n", model, r.Budget)
	fmt.Fprintf(&b, "- persona: %d tokens; with where and when: %d tokens\n", r.PersonaTokens, r.SystemTokens)
	fmt.Fprintf(&b, "- transcript: %d of %d stored message(s) fit, %d tokens", r.TranscriptMessages, r.TranscriptStored, r.TranscriptTokens)
	if r.Compacted {
		b.WriteString(" (starts from a /compact summary)")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- observed group messages: %d (%d tokens)\n", req.Observed, req.ObservedTokens)
	if len(r.Tools) == 0 {
		b.WriteString("- tools: none")
	} else {
		fmt.Fprintf(&b, "- tools (%d): %s", len(r.Tools), strings.Join(r.Tools, ", "))
	}
	return b.String()
}
