package pipeline

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// SummaryMaxRunes bounds a dropped message's one-line summary.
const SummaryMaxRunes = 160

// JoinTexts is the turn text of a debounced batch: the messages' texts,
// in order, joined by newlines.
func JoinTexts(texts []string) string { return strings.Join(texts, "\n") }

// CollectHeader opens the text of a turn that answers everything queued
// while the agent was busy.
const CollectHeader = "[Queued messages while agent was busy]"

// RenderCollected is the turn text for collect mode: each queued batch
// under its own "Queued #n" heading.
func RenderCollected(batches []string) string {
	var b strings.Builder
	b.WriteString(CollectHeader)
	for i, text := range batches {
		fmt.Fprintf(&b, "\n\n---\nQueued #%d\n%s", i+1, text)
	}
	return b.String()
}

// AbortedNotice opens the text of the first turn after an abort.
const AbortedNotice = "[The previous run was aborted by the user.]"

// NewTranscriptReply answers /new and /reset.
const NewTranscriptReply = "New conversation started; your settings are kept."

// AbortedReply answers a stop command.
const AbortedReply = "Agent was aborted."

// SteerHeader introduces messages injected into a running turn.
const SteerHeader = "[New message(s) while you were working]"

// RenderSteered appends messages steered into a running turn to its text.
func RenderSteered(text string, steered []string) string {
	return text + "\n\n" + SteerHeader + "\n" + JoinTexts(steered)
}

// SummaryLine is a one-line summary of a dropped message: whitespace
// folded, at most SummaryMaxRunes runes, marked with "…" when cut.
func SummaryLine(sender, text string) string {
	line := oneLine(text)
	if sender != "" {
		line = oneLine(sender) + ": " + line
	}
	return cutRunes(line, SummaryMaxRunes)
}

// oneLine folds whitespace and replaces invalid UTF-8, which platforms
// refuse, so that model or user text can be quoted in a message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

// cutRunes keeps s to at most n runes, marking a cut with "…".
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// CutBytes keeps s to at most n bytes without splitting a UTF-8 sequence,
// marking a cut with "…" (which counts towards n).
func CutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := "…"
	if n < len(mark) {
		mark = ""
	}
	end := max(n-len(mark), 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

// RenderOverflow is the notice a turn's text starts with after the queue
// dropped messages under the summarize policy.
func RenderOverflow(dropped int, summaries []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Queue overflow] Dropped %d message(s) due to cap.", dropped)
	for _, s := range summaries {
		b.WriteString("\n- ")
		b.WriteString(s)
	}
	return b.String()
}

// StatusInfo is what /status reports; the workflow fills it from state.
type StatusInfo struct {
	Session string
	Model   string
	// Fallback says why the last turn's model was not the first choice.
	Fallback    string
	Queue       QueueSettings
	QueueDepth  int
	State       string
	LastTurn    time.Duration
	LastOutcome string
	TurnsTotal  int
	// Heartbeat is the last heartbeat tick and its outcome ("" leaves
	// the line out: a session with no heartbeat); Muted is /send off.
	Heartbeat string
	Muted     bool
}

// RenderStatus is the /status reply.
func RenderStatus(s StatusInfo) string {
	last := "none yet"
	if s.LastOutcome != "" {
		last = fmt.Sprintf("%s in %s", s.LastOutcome, s.LastTurn.Round(time.Millisecond))
	}
	model := s.Model
	if s.Fallback != "" {
		model += " (after " + s.Fallback + ")"
	}
	text := fmt.Sprintf("Session %s\nModel: %s\nQueue: %s (depth %d)\nState: %s\nLast turn: %s (turns so far: %d)",
		s.Session, model, s.Queue.Describe(), s.QueueDepth, s.State, last, s.TurnsTotal)
	if s.Muted {
		text += "\nReplies: muted (/send on unmutes)"
	}
	if s.Heartbeat != "" {
		text += "\nHeartbeat: " + s.Heartbeat
	}
	return text
}
