package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// summaryModel answers every prompt with text (or err) and counts calls.
type summaryModel struct {
	mu      sync.Mutex
	calls   int
	prompts []models.Prompt
	text    string
	err     error
}

func (*summaryModel) Name() string { return "test/summary" }

func (m *summaryModel) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.prompts = append(m.prompts, p)
	return models.Completion{Text: m.text}, m.err
}

type oneModel struct{ models.Model }

func (o oneModel) Get(string) (models.Model, error) { return o.Model, nil }

// fileOutbound is a platform that takes files.
type fileOutbound struct {
	fakeOutbound
	files []adapters.File
	under []pipeline.Delivery
}

func (f *fileOutbound) SendFile(_ context.Context, d pipeline.Delivery, file adapters.File) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files = append(f.files, file)
	f.under = append(f.under, d)
	return fmt.Sprintf("file-%d", len(f.files)), nil
}

// storeWithTranscript opens a store whose session transcript holds n
// exchanges.
func storeWithTranscript(t *testing.T, n int) *store.Store {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	entry, err := db.SessionEntry(ctx, session.WorkflowID())
	require.NoError(t, err)
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	for i := range n {
		require.NoError(t, db.Append(ctx, entry.TranscriptID, []store.Message{
			{Key: fmt.Sprintf("t%d/user", i), Role: "user", Sender: "alice", Body: fmt.Sprintf("question %d", i), CreatedAt: at},
			{Key: fmt.Sprintf("t%d/assistant", i), Role: "assistant", Body: fmt.Sprintf("answer %d", i), CreatedAt: at},
		}))
	}
	return db
}

func TestDescribeContextCountsWhatThePromptHolds(t *testing.T) {
	db := storeWithTranscript(t, 3)
	acts := &Activities{Store: db, SystemPrompt: strings.Repeat("p", 400), ContextTokens: 8000, Logger: slog.Default()}
	v, err := newActivityEnv(acts).ExecuteActivity(acts.DescribeContext, pipeline.ContextRequest{Session: session, Observed: 1, ObservedTokens: 5})
	require.NoError(t, err)
	var r pipeline.ContextReport
	require.NoError(t, v.Get(&r))
	assert.Equal(t, 101, r.PersonaTokens)
	assert.Greater(t, r.SystemTokens, r.PersonaTokens)
	assert.Equal(t, 6, r.TranscriptStored)
	assert.Equal(t, 6, r.TranscriptMessages)
	assert.Equal(t, 6*3, r.TranscriptTokens, "each short body is 3 tokens by the estimate")
	assert.Equal(t, 8000, r.Budget)
	assert.Equal(t, []string{pipeline.SkipResponseTool, pipeline.DisengageTool}, r.Tools)

	acts.ContextTokens = r.SystemTokens + 5 + 7 // room for two bodies after the reserve
	v, err = newActivityEnv(acts).ExecuteActivity(acts.DescribeContext, pipeline.ContextRequest{Session: session, Observed: 1, ObservedTokens: 5})
	require.NoError(t, err)
	require.NoError(t, v.Get(&r))
	assert.Equal(t, 2, r.TranscriptMessages, "the window that fits the budget, opening on a user message")
}

func TestCompactTranscriptSummarizesOnceAndGoesOnFromTheSummary(t *testing.T) {
	ctx := context.Background()
	db := storeWithTranscript(t, 4)
	model := &summaryModel{text: "Alice asked four questions; all were answered."}
	acts := &Activities{Store: db, Models: oneModel{model}, Logger: slog.Default()}
	req := pipeline.CompactRequest{Session: session, Key: "m9", Model: "test/summary", Focus: "the questions"}
	for range 2 { // a retried attempt
		v, err := newActivityEnv(acts).ExecuteActivity(acts.CompactTranscript, req)
		require.NoError(t, err)
		var res pipeline.CompactResult
		require.NoError(t, v.Get(&res))
		assert.Equal(t, 8, res.Summarized)
	}
	assert.Equal(t, 1, model.calls, "one summary, however often the attempt runs")
	assert.Contains(t, model.prompts[0].System, "Keep this in view above all: the questions")
	assert.Contains(t, model.prompts[0].Messages[0].Text, "alice: question 3")

	entry, err := db.SessionEntry(ctx, session.WorkflowID())
	require.NoError(t, err)
	assert.Equal(t, session.WorkflowID()+"#compact-m9", entry.TranscriptID, "the session goes on in the new transcript")
	msgs, err := db.Recent(ctx, entry.TranscriptID, 10)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "[Summary of our conversation so far]\nAlice asked four questions; all were answered.", msgs[0].Body)
	assert.Equal(t, "user", msgs[0].Role, "the window opens on a user message, as providers require")

	var r pipeline.ContextReport
	v, err := newActivityEnv(acts).ExecuteActivity(acts.DescribeContext, pipeline.ContextRequest{Session: session})
	require.NoError(t, err)
	require.NoError(t, v.Get(&r))
	assert.True(t, r.Compacted)
}

func TestCompactTranscriptOfNothingAsksNoModel(t *testing.T) {
	db := storeWithTranscript(t, 0)
	model := &summaryModel{text: "x"}
	acts := &Activities{Store: db, Models: oneModel{model}, Logger: slog.Default()}
	v, err := newActivityEnv(acts).ExecuteActivity(acts.CompactTranscript, pipeline.CompactRequest{Session: session, Key: "m1", Model: "test/summary"})
	require.NoError(t, err)
	var res pipeline.CompactResult
	require.NoError(t, v.Get(&res))
	assert.Zero(t, res.Summarized)
	assert.Zero(t, model.calls)
}

func TestCompactTranscriptFailuresAreTypedLikeATurns(t *testing.T) {
	db := storeWithTranscript(t, 1)
	model := &summaryModel{err: &models.Error{Type: pipeline.ErrRateLimited, Model: "test/summary", Err: errors.New("slow down")}}
	acts := &Activities{Store: db, Models: oneModel{model}, Logger: slog.Default()}
	_, err := newActivityEnv(acts).ExecuteActivity(acts.CompactTranscript, pipeline.CompactRequest{Session: session, Key: "m1", Model: "test/summary"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrRateLimited, app.Type(), "the workflow moves on along the chain")

	model.err, model.text = nil, "   "
	_, err = newActivityEnv(acts).ExecuteActivity(acts.CompactTranscript, pipeline.CompactRequest{Session: session, Key: "m2", Model: "test/summary"})
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrFormat, app.Type(), "an empty summary replaces nothing")
	entry, err := db.SessionEntry(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	assert.Equal(t, session.WorkflowID()+"#1", entry.TranscriptID, "the transcript is unchanged")
}

func TestExportTranscriptSendsAFileWhereThePlatformTakesOne(t *testing.T) {
	db := storeWithTranscript(t, 2)
	out := &fileOutbound{}
	acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	req := pipeline.ExportRequest{Session: session, IdempotencyKey: "session:webchat:room/export/e1", ReplyTo: "e1", ThreadID: "th"}
	for range 2 {
		v, err := newActivityEnv(acts).ExecuteActivity(acts.ExportTranscript, req)
		require.NoError(t, err)
		var res pipeline.ExportResult
		require.NoError(t, v.Get(&res))
		assert.Equal(t, pipeline.ExportResult{Messages: 4, AsFile: true}, res)
	}
	require.Len(t, out.files, 1, "a retried export sends the file once")
	assert.Regexp(t, `^transcript-room-\d{4}-\d\d-\d\d\.md$`, out.files[0].Name)
	assert.Equal(t, "text/markdown; charset=utf-8", out.files[0].ContentType)
	assert.Contains(t, string(out.files[0].Data), "### alice · 2026-11-24 09:00 UTC\n\n> question 1\n")
	assert.Equal(t, "e1", out.under[0].ReplyTo)
	assert.Equal(t, "th", out.under[0].ThreadID)
	assert.Empty(t, out.sent, "no text replies besides the file")
}

func TestExportTranscriptIsChunkedWhereThePlatformTakesNoFiles(t *testing.T) {
	db := storeWithTranscript(t, 300)
	out := &fakeOutbound{}
	acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{"webchat": out}, Settings: pipeline.Settings{ChunkLimit: 1000}, Logger: slog.Default()}
	req := pipeline.ExportRequest{Session: session, IdempotencyKey: "k", ReplyTo: "e1"}
	var res pipeline.ExportResult
	for range 2 {
		v, err := newActivityEnv(acts).ExecuteActivity(acts.ExportTranscript, req)
		require.NoError(t, err)
		require.NoError(t, v.Get(&res))
	}
	assert.LessOrEqual(t, res.Chunks, maxExportChunks)
	assert.Less(t, res.Messages, 600, "the newest messages that fit")
	assert.Greater(t, res.Messages, 50)
	require.Len(t, out.sent, res.Chunks, "a retried export sends no chunk twice")
	assert.Equal(t, "e1", out.sent[0].ReplyTo)
	assert.Contains(t, out.sent[0].Text, "older one(s) are left out")
	assert.Contains(t, out.sent[len(out.sent)-1].Text, "answer 299")
	for _, d := range out.sent {
		assert.LessOrEqual(t, len([]rune(d.Text)), 1000)
	}
}

// markingChunker cuts as pipeline.Chunk does, marks every chunk, and
// records the limits it was asked to cut at.
type markingChunker struct{ limits []int }

func (c *markingChunker) ChunkLimit() int { return 1500 }

func (c *markingChunker) Chunk(markdown string, limit int) []string {
	c.limits = append(c.limits, limit)
	var out []string
	for _, chunk := range pipeline.Chunk(markdown, limit-len("[cut] ")) {
		out = append(out, "[cut] "+chunk)
	}
	return out
}

func TestExportTranscriptIsCutByItsPlatformsChunker(t *testing.T) {
	for _, c := range []struct {
		name       string
		configured int
		want       int
	}{
		{"at the platform's limit", 0, 1500},
		{"at the configured limit", 1000, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := &fakeOutbound{}
			chunker := &markingChunker{}
			acts := &Activities{Store: storeWithTranscript(t, 300), Outbound: map[string]adapters.Outbound{"webchat": out},
				Chunkers: map[string]adapters.Chunker{"webchat": chunker}, Settings: pipeline.Settings{ChunkLimit: c.configured}, Logger: slog.Default()}
			v, err := newActivityEnv(acts).ExecuteActivity(acts.ExportTranscript, pipeline.ExportRequest{Session: session, IdempotencyKey: "k"})
			require.NoError(t, err)
			var res pipeline.ExportResult
			require.NoError(t, v.Get(&res))
			assert.Equal(t, []int{c.want}, chunker.limits)
			require.Len(t, out.sent, res.Chunks)
			for _, d := range out.sent {
				assert.True(t, strings.HasPrefix(d.Text, "[cut] "), "%.40q was cut by the channel's chunker", d.Text)
				assert.LessOrEqual(t, len([]rune(d.Text)), c.want)
			}
		})
	}
}
