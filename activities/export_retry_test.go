package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// failingAfter is a platform without files that takes `take` sends, then
// fails every send until it is given more.
type failingAfter struct {
	fakeOutbound
	take int
}

func (f *failingAfter) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	f.mu.Lock()
	if len(f.sent) >= f.take {
		f.mu.Unlock()
		return "", &adapters.Error{Kind: adapters.Transient, Op: "send", Err: errors.New("connection reset")}
	}
	f.mu.Unlock()
	_, _ = f.fakeOutbound.Send(ctx, d)
	return fmt.Sprintf("p-%s", d.IdempotencyKey), nil
}

// exportedAt is the export's time in its header, which this test does
// not control (a minute may turn between two renderings).
var exportedAt = regexp.MustCompile(`Exported \d{4}-\d\d-\d\d \d\d:\d\d UTC`)

// A retried /export sends the rest of the document its first attempt
// started, though the transcript changed in between: every part once,
// in order, nothing shifted or missing.
func TestARetriedExportSendsTheDocumentItStarted(t *testing.T) {
	ctx := context.Background()
	db := storeWithTranscript(t, 60)
	out := &failingAfter{take: 3}
	acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{"webchat": out}, Settings: pipeline.Settings{ChunkLimit: 300}, Logger: slog.Default()}
	req := pipeline.ExportRequest{Session: session, IdempotencyKey: session.WorkflowID() + "/export/e1", ReplyTo: "e1"}

	started, _, err := ExportDocument(ctx, db, session, 300*maxExportChunks*9/10, time.Now())
	require.NoError(t, err)
	_, err = newActivityEnv(acts).ExecuteActivity(acts.ExportTranscript, req)
	require.Error(t, err, "the first attempt sent three parts, then failed")
	require.Len(t, out.sent, 3)

	// The conversation goes on before the retry: the newest messages
	// that fit are others now.
	entry, err := db.SessionEntry(ctx, session.WorkflowID())
	require.NoError(t, err)
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for i := range 20 {
		require.NoError(t, db.Append(ctx, entry.TranscriptID, []store.Message{
			{Key: fmt.Sprintf("later%d/user", i), Role: "user", Sender: "alice", Body: fmt.Sprintf("a later question %d", i), CreatedAt: at},
		}))
	}
	out.take = 100
	v, err := newActivityEnv(acts).ExecuteActivity(acts.ExportTranscript, req)
	require.NoError(t, err)
	var res pipeline.ExportResult
	require.NoError(t, v.Get(&res))

	want := pipeline.Chunk(started, 300)
	require.Len(t, out.sent, len(want), "each part once")
	for i, d := range out.sent {
		assert.Equal(t, exportedAt.ReplaceAllString(want[i], "Exported <time>"), exportedAt.ReplaceAllString(d.Text, "Exported <time>"), "part %d is the started document's", i+1)
		assert.Equal(t, fmt.Sprintf("%s/%d", req.IdempotencyKey, i), d.IdempotencyKey)
		assert.Equal(t, len(want), d.Total)
	}
	assert.Equal(t, len(want), res.Chunks)
	for _, d := range out.sent {
		assert.NotContains(t, d.Text, "a later question", "a message after the export started is not in it")
	}
	assert.True(t, strings.Contains(out.sent[len(out.sent)-1].Text, "answer 59"))
}
