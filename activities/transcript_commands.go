package activities

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Bounds of /export and /compact.
const (
	// maxExportMessages is how many of the newest messages an export
	// reads; maxExportBytes how large the document may grow (older
	// messages are left out, and the document says so).
	maxExportMessages = 1000
	maxExportBytes    = 1 << 20
	// maxExportChunks bounds an export sent as text replies where the
	// platform takes no files: a chat is no place for hundreds of them.
	maxExportChunks = 12
	// compactKeyPrefix marks the summary that starts a compacted
	// transcript; the number after it is how many messages it replaced.
	compactKeyPrefix = "compact/"
)

// compactPrompt is the summarizer's instruction.
const compactPrompt = "You summarize a chat conversation so that it can go on from your summary alone. " +
	"Keep the facts, decisions, open questions, names, numbers and what each person asked for; drop greetings and repetition. " +
	"Write it as short paragraphs or a list, in the conversation's language, without preamble."

// DescribeContext says what the session's next prompt would hold (/context):
// the same persona, system text and budget window as AgentTurn's prompt.
func (a *Activities) DescribeContext(ctx context.Context, req pipeline.ContextRequest) (pipeline.ContextReport, error) {
	system := a.systemText(req.Session, req.Group, time.Now())
	r := pipeline.ContextReport{
		PersonaTokens: pipeline.EstimateTokens(a.SystemPrompt),
		SystemTokens:  pipeline.EstimateTokens(system),
		Budget:        a.budget(),
	}
	if a.SystemPrompt == "" {
		r.PersonaTokens = 0
	}
	for _, t := range a.Tools.specs() {
		r.Tools = append(r.Tools, t.Name)
	}
	if a.Store == nil {
		return r, nil
	}
	_, history, err := a.currentTranscript(ctx, req.Session, transcriptWindow)
	if err != nil {
		return r, err
	}
	r.TranscriptStored = len(history)
	r.Compacted = len(history) > 0 && strings.HasPrefix(history[0].Key, compactKeyPrefix)
	kept := a.window(history, r.SystemTokens+req.ObservedTokens)
	r.TranscriptMessages = len(kept)
	for _, m := range kept {
		r.TranscriptTokens += pipeline.EstimateTokens(m.Body)
	}
	return r, nil
}

// CompactTranscript has req.Model summarize the session's transcript and
// makes a new transcript, opened by the summary, the session's current
// one (/compact). It is idempotent by req.Key: the summary is written to
// the new transcript before the session points at it, so a retry after
// either step finishes the work without a second summary.
func (a *Activities) CompactTranscript(ctx context.Context, req pipeline.CompactRequest) (pipeline.CompactResult, error) {
	if a.Store == nil {
		return pipeline.CompactResult{}, nil
	}
	sessionID := req.Session.WorkflowID()
	key := "compact-" + req.Key
	newID := sessionID + "#" + key
	if done, ok, err := a.compacted(ctx, newID); err != nil || ok {
		if err == nil {
			_, err = a.Store.StartTranscript(ctx, sessionID, key)
		}
		return done, err
	}
	currentID, history, err := a.currentTranscript(ctx, req.Session, transcriptWindow)
	if err != nil {
		return pipeline.CompactResult{}, err
	}
	if len(history) == 0 || currentID == newID {
		return pipeline.CompactResult{}, nil
	}
	turn := pipeline.TurnRequest{Session: req.Session, TurnID: "compact " + req.Key, Model: req.Model}
	model, err := a.Models.Get(req.Model)
	if err != nil {
		return pipeline.CompactResult{}, modelError(turn, err, nil)
	}
	if err := a.Spend.admitCompaction(ctx, req); err != nil {
		return pipeline.CompactResult{}, err
	}
	prompt := compactionPrompt(history, req.Focus)
	answer, err := model.Complete(ctx, prompt)
	if err != nil {
		if ctx.Err() != nil {
			return pipeline.CompactResult{}, ctx.Err()
		}
		return pipeline.CompactResult{}, modelError(turn, err, nil)
	}
	a.Spend.counted(ctx, a.Logger, req.Session, req.Sender, req.Model, callCompact, answer.Usage, func() int64 { return estimateTokens(prompt, answer) })
	summary := strings.TrimSpace(answer.Text)
	if summary == "" {
		return pipeline.CompactResult{}, modelError(turn, &models.Error{Type: pipeline.ErrFormat, Model: req.Model, Err: fmt.Errorf("the summary is empty")}, nil)
	}
	now := time.Now()
	prefix := compactKeyPrefix + strconv.Itoa(len(history))
	err = a.Store.Append(ctx, newID, []store.Message{
		{Key: prefix + "/user", Role: "user", Sender: "replyflow", Body: "[Summary of our conversation so far]\n" + summary, CreatedAt: now},
		{Key: prefix + "/assistant", Role: "assistant", Body: "Understood: I go on from this summary.", CreatedAt: now},
	})
	if err == nil {
		_, err = a.Store.StartTranscript(ctx, sessionID, key)
	}
	if err != nil {
		return pipeline.CompactResult{}, fmt.Errorf("save the summary of %s: %w", sessionID, err)
	}
	a.Logger.Info("Transcript compacted", "session", sessionID, "messages", len(history), "model", req.Model)
	return pipeline.CompactResult{Summarized: len(history), SummaryTokens: pipeline.EstimateTokens(summary), Model: req.Model}, nil
}

// compacted reads back a compaction already written to transcriptID.
func (a *Activities) compacted(ctx context.Context, transcriptID string) (pipeline.CompactResult, bool, error) {
	msgs, err := a.Store.Recent(ctx, transcriptID, transcriptWindow)
	if err != nil || len(msgs) == 0 || !strings.HasPrefix(msgs[0].Key, compactKeyPrefix) {
		return pipeline.CompactResult{}, false, err
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(msgs[0].Key, compactKeyPrefix), "/user"))
	return pipeline.CompactResult{Summarized: n, SummaryTokens: pipeline.EstimateTokens(msgs[0].Body)}, true, nil
}

func compactionPrompt(history []store.Message, focus string) models.Prompt {
	system := compactPrompt
	if focus != "" {
		system += "\n\nKeep this in view above all: " + focus
	}
	var b strings.Builder
	for _, m := range history {
		who := m.Sender
		if m.Role == "assistant" || who == "" {
			who = m.Role
		}
		fmt.Fprintf(&b, "%s: %s\n\n", who, m.Body)
	}
	return models.Prompt{System: system, Messages: []models.Message{{Role: "user", Text: "The conversation:\n\n" + b.String()}}}
}

// currentTranscript is the session's transcript ID and its newest
// messages, at most limit, oldest first.
func (a *Activities) currentTranscript(ctx context.Context, key pipeline.SessionKey, limit int) (string, []store.Message, error) {
	entry, err := a.Store.SessionEntry(ctx, key.WorkflowID())
	if err != nil {
		return "", nil, fmt.Errorf("read the session entry of %s: %w", key.WorkflowID(), err)
	}
	msgs, err := a.Store.Recent(ctx, entry.TranscriptID, limit)
	if err != nil {
		return "", nil, fmt.Errorf("read the transcript of %s: %w", key.WorkflowID(), err)
	}
	return entry.TranscriptID, msgs, nil
}

// ExportDocument renders the session's current transcript as /export's
// Markdown, at most maxBytes (older messages left out first). n is how
// many messages it holds.
func ExportDocument(ctx context.Context, st Transcripts, key pipeline.SessionKey, maxBytes int, now time.Time) (doc string, n int, err error) {
	a := &Activities{Store: st}
	_, msgs, err := a.currentTranscript(ctx, key, maxExportMessages)
	if err != nil {
		return "", 0, err
	}
	lines := make([]pipeline.TranscriptLine, len(msgs))
	for i, m := range msgs {
		who := m.Sender
		if m.Role == "assistant" {
			who = "assistant"
		}
		if who == "" {
			who = m.Role
		}
		lines[i] = pipeline.TranscriptLine{Who: who, At: m.CreatedAt, Body: m.Body}
	}
	for from := 0; ; from++ {
		doc = pipeline.RenderTranscriptMarkdown(key.WorkflowID(), lines[from:], from, now)
		if len(doc) <= maxBytes || from == len(lines) {
			return doc, len(lines) - from, nil
		}
	}
}

// ExportTranscript sends the session's transcript as a Markdown document
// (/export): one file where the platform takes files, else text replies
// of the newest messages that fit maxExportChunks. Each part is keyed in
// the delivery ledger, so a retry sends nothing twice; and the text
// replies' document is fixed at the first attempt (the store keeps it as
// long as the ledger keeps its parts), so a retry sends the rest of the
// document it started, however the transcript changed meanwhile.
func (a *Activities) ExportTranscript(ctx context.Context, req pipeline.ExportRequest) (pipeline.ExportResult, error) {
	if a.Store == nil {
		return pipeline.ExportResult{}, nil
	}
	out, err := a.outbound(req.Session.Channel)
	if err != nil {
		return pipeline.ExportResult{}, err
	}
	if files, ok := out.(adapters.FileSender); ok {
		return a.exportFile(ctx, files, req)
	}
	limit := a.chunkLimit(req.Session)
	doc, n, err := a.startedExport(ctx, req, limit*maxExportChunks*9/10)
	if err != nil || n == 0 {
		return pipeline.ExportResult{}, err
	}
	chunks := a.chunker(req.Session.Channel).Chunk(doc, limit)
	for i, text := range chunks {
		d := pipeline.Delivery{Session: req.Session, IdempotencyKey: fmt.Sprintf("%s/%d", req.IdempotencyKey, i),
			ThreadID: req.ThreadID, Text: text, Index: i, Total: len(chunks)}
		if i == 0 {
			d.ReplyTo = req.ReplyTo
		}
		if _, err := a.Deliver(ctx, d); err != nil {
			return pipeline.ExportResult{}, err
		}
	}
	return pipeline.ExportResult{Messages: n, Chunks: len(chunks)}, nil
}

// startedExport is the document an export's first attempt built, or,
// on the first attempt, the transcript's document now, kept for the
// retries. An empty transcript keeps nothing: there is nothing to send.
func (a *Activities) startedExport(ctx context.Context, req pipeline.ExportRequest, maxBytes int) (string, int, error) {
	sessionID := req.Session.WorkflowID()
	kept, found, err := a.Store.Export(ctx, sessionID, req.IdempotencyKey)
	if err != nil || found {
		return kept.Text, kept.Messages, err
	}
	doc, n, err := ExportDocument(ctx, a.Store, req.Session, maxBytes, time.Now())
	if err != nil || n == 0 {
		return "", 0, err
	}
	kept, err = a.Store.KeepExport(ctx, sessionID, req.IdempotencyKey, store.ExportDocument{Text: doc, Messages: n})
	return kept.Text, kept.Messages, err
}

func (a *Activities) exportFile(ctx context.Context, files adapters.FileSender, req pipeline.ExportRequest) (pipeline.ExportResult, error) {
	now := time.Now()
	limit := maxExportBytes
	if bounded, ok := files.(interface{ MaxFileBytes() int }); ok {
		limit = min(limit, bounded.MaxFileBytes())
	}
	doc, n, err := ExportDocument(ctx, a.Store, req.Session, limit, now)
	if err != nil || n == 0 {
		return pipeline.ExportResult{}, err
	}
	d := pipeline.Delivery{Session: req.Session, IdempotencyKey: req.IdempotencyKey + "/file", ThreadID: req.ThreadID, ReplyTo: req.ReplyTo,
		Text: fmt.Sprintf("The conversation so far: %d message(s).", n), Total: 1}
	if _, sent, err := a.claimSend(ctx, d); err != nil || sent {
		return pipeline.ExportResult{Messages: n, AsFile: true}, err
	}
	name := fmt.Sprintf("transcript-%s-%s.md", req.Session.Chat, now.UTC().Format("2006-01-02"))
	id, err := files.SendFile(ctx, d, adapters.File{Name: name, ContentType: "text/markdown; charset=utf-8", Data: []byte(doc)})
	if err != nil {
		a.releaseSend(ctx, d)
		return pipeline.ExportResult{}, platformError("send the transcript of "+req.Session.WorkflowID()+" as a file", err)
	}
	a.mapMessage(ctx, d, id)
	return pipeline.ExportResult{Messages: n, AsFile: true}, nil
}

// chunkLimit is the session's reply chunk limit: its settings', else its
// platform's.
func (a *Activities) chunkLimit(key pipeline.SessionKey) int {
	s := a.Settings
	if a.ChannelSettings != nil {
		s = a.ChannelSettings(key, s)
	}
	if s.ChunkLimit <= 0 {
		return a.chunker(key.Channel).ChunkLimit()
	}
	return s.ChunkLimit
}

// chunker is how channel's platform cuts its messages.
func (a *Activities) chunker(channel string) adapters.Chunker {
	if c, ok := a.Chunkers[channel]; ok {
		return c
	}
	return adapters.DefaultChunker
}
