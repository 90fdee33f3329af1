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
	"go.temporal.io/sdk/worker"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// screen records what a chat shows: messages sent, and each edit with
// when it came.
type screen struct {
	fakeOutbound
	mu     sync.Mutex
	posted []pipeline.Delivery
	edits  []pipeline.Edit
	at     []time.Time
}

func (s *screen) Send(_ context.Context, d pipeline.Delivery) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posted = append(s.posted, d)
	return fmt.Sprintf("msg-%d", len(s.posted)), nil
}

func (s *screen) Edit(_ context.Context, e pipeline.Edit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.edits, s.at = append(s.edits, e), append(s.at, time.Now())
	return nil
}

// writer is a model that writes its words one by one, at a pace.
type writer struct {
	words []string
	pace  time.Duration
	// failAfter, when positive, breaks the stream after that many words.
	failAfter int
	// cancelAfter cancels the attempt after that many words.
	cancelAfter int
	cancel      context.CancelFunc
	mu          sync.Mutex
	prompts     []models.Prompt
}

func (*writer) Name() string { return "test/writer" }

func (w *writer) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	return w.Stream(ctx, p, func(string) {})
}

func (w *writer) Stream(ctx context.Context, p models.Prompt, onText func(string)) (models.Completion, error) {
	w.mu.Lock()
	w.prompts = append(w.prompts, p)
	w.mu.Unlock()
	var text strings.Builder
	for i, word := range w.words {
		if w.failAfter > 0 && i == w.failAfter {
			return models.Completion{}, &models.Error{Type: pipeline.ErrTimeout, Model: "test/writer", Err: errors.New("connection reset")}
		}
		if w.cancelAfter > 0 && i == w.cancelAfter {
			w.cancel()
		}
		select {
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		case <-time.After(w.pace):
		}
		text.WriteString(word)
		onText(text.String())
	}
	return models.Completion{Text: strings.TrimSpace(text.String())}, nil
}

func words(n int, word string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = word + " "
	}
	return out
}

func streamingActs(out adapters.Outbound, m models.Model, mode pipeline.StreamMode) *Activities {
	return &Activities{
		Models:    only{m},
		Outbound:  map[string]adapters.Outbound{"webchat": out},
		Streaming: Streaming{Mode: mode, Pacing: pipeline.PreviewPacing{FirstAfter: 60 * time.Millisecond, Every: 60 * time.Millisecond}, BlockIdle: time.Hour, BlockPause: time.Millisecond},
		Logger:    slog.Default(),
	}
}

var streamReq = pipeline.TurnRequest{Session: session, TurnID: "t1", ThreadID: "th", Stream: true, Text: "hi", Messages: []pipeline.TurnMessage{{MessageID: "u1"}}}

func turnResult(t *testing.T, acts *Activities, req pipeline.TurnRequest) (pipeline.TurnResult, error) {
	v, err := newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	if err != nil {
		return pipeline.TurnResult{}, err
	}
	var r pipeline.TurnResult
	require.NoError(t, v.Get(&r))
	return r, nil
}

func TestAPreviewAppearsThenIsEditedAtMostAtItsPace(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: words(30, "word"), pace: 10 * time.Millisecond}, pipeline.StreamPreview)
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	require.Len(t, out.posted, 1, "one preview message")
	assert.Equal(t, "u1", out.posted[0].ReplyTo)
	assert.Equal(t, "th", out.posted[0].ThreadID)
	require.NotNil(t, r.Shown)
	assert.Equal(t, pipeline.Shown{Mode: pipeline.StreamPreview, PreviewID: "msg-1", Text: r.Shown.Text}, *r.Shown)
	assert.True(t, strings.HasPrefix(r.Reply, r.Shown.Text), "the preview shows the start of the answer")
	assert.Equal(t, strings.TrimSpace(strings.Repeat("word ", 30)), r.Reply)
	require.GreaterOrEqual(t, len(out.edits), 2, "edited as it grew")
	for i := 1; i < len(out.at); i++ {
		assert.GreaterOrEqual(t, out.at[i].Sub(out.at[i-1]), 55*time.Millisecond, "edits are paced")
	}
	for _, e := range out.edits {
		assert.Equal(t, "msg-1", e.PlatformMessageID)
	}
}

func TestAQuickAnswerShowsNoPreview(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: words(3, "hi"), pace: time.Millisecond}, pipeline.StreamPreview)
	// Done long before the preview's time, however loaded the machine.
	acts.Streaming.Pacing.FirstAfter = time.Hour
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	assert.Empty(t, out.posted)
	assert.Nil(t, r.Shown, "nothing shown: the answer is delivered as usual")
}

func TestASilentAnswerNeverFlashes(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: []string{"NO", "_RE", "PLY"}, pace: 50 * time.Millisecond}, pipeline.StreamPreview)
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	assert.Empty(t, out.posted, "NO_REPLY is never shown, however slowly it is written")
	assert.Nil(t, r.Shown)
}

func TestNothingStreamsWhenTheSessionDoesNotAllowIt(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: words(30, "word"), pace: 10 * time.Millisecond}, pipeline.StreamPreview)
	req := streamReq
	req.Stream = false
	r, err := turnResult(t, acts, req)
	require.NoError(t, err)
	assert.Empty(t, out.posted)
	assert.Nil(t, r.Shown)
}

func paragraphs(n int) []string {
	var out []string
	for p := 0; p < n; p++ {
		out = append(out, words(30, fmt.Sprintf("paragraph%d-word", p))...) // 480 characters
		out[len(out)-1] = fmt.Sprintf("p%d\n\n", p)
	}
	out[len(out)-1] = fmt.Sprintf("p%d", n-1) // an answer ends without a blank line
	return out
}

func TestBlocksAreSentAsParagraphsCompleteAndTheRestIsLeftToTheDelivery(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: paragraphs(6), pace: 2 * time.Millisecond}, pipeline.StreamBlocks)
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	require.NotNil(t, r.Shown)
	require.Len(t, out.posted, 2, "two blocks of two paragraphs; the last two wait for the final delivery")
	assert.Equal(t, "u1", out.posted[0].ReplyTo, "the first block answers the message")
	assert.Empty(t, out.posted[1].ReplyTo)
	assert.Equal(t, []string{"msg-1", "msg-2"}, r.Shown.Blocks)
	assert.True(t, strings.HasPrefix(r.Reply, r.Shown.Text))
	assert.Equal(t, out.posted[0].Text+"\n\n"+out.posted[1].Text, strings.TrimSpace(r.Shown.Text))
	rest := strings.TrimSpace(strings.TrimPrefix(r.Reply, r.Shown.Text))
	assert.True(t, strings.HasPrefix(rest, "paragraph4-word "), "the rest starts at the fifth paragraph: %.20q", rest)
	assert.Equal(t, session.WorkflowID()+"/t1/block/1", out.posted[1].IdempotencyKey)
}

func TestABlocksAttemptAfterACrashContinuesAfterWhatWasSent(t *testing.T) {
	out := &screen{}
	m := &writer{words: paragraphs(6)[60:], pace: 2 * time.Millisecond}
	acts := streamingActs(out, m, pipeline.StreamBlocks)
	req := streamReq
	sent := strings.TrimSpace(strings.Join(paragraphs(2), "")) + "\n\n"
	req.Shown = &pipeline.Shown{Mode: pipeline.StreamBlocks, Blocks: []string{"old-1"}, Text: sent}
	r, err := turnResult(t, acts, req)
	require.NoError(t, err)
	require.Len(t, m.prompts, 1)
	last := m.prompts[0].Messages[len(m.prompts[0].Messages)-1]
	assert.Equal(t, models.Message{Role: "assistant", Text: strings.TrimSpace(sent)}, last, "the model continues the answer the user saw")
	assert.True(t, strings.HasPrefix(r.Reply, sent), "the answer is what was sent, then the rest")
	require.Len(t, out.posted, 1)
	assert.True(t, strings.HasSuffix(out.posted[0].IdempotencyKey, "/t1/block/1"), "block numbering goes on: %s", out.posted[0].IdempotencyKey)
	assert.Empty(t, out.posted[0].ReplyTo)
	assert.Equal(t, []string{"old-1", "msg-1"}, r.Shown.Blocks)
}

func TestAPreviewAttemptAfterAFailureEditsTheSamePreview(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: words(20, "again"), pace: 10 * time.Millisecond}, pipeline.StreamPreview)
	req := streamReq
	req.Shown = &pipeline.Shown{Mode: pipeline.StreamPreview, PreviewID: "earlier", Text: "word word"}
	r, err := turnResult(t, acts, req)
	require.NoError(t, err)
	assert.Empty(t, out.posted, "no second preview")
	require.NotEmpty(t, out.edits)
	assert.Equal(t, "earlier", out.edits[0].PlatformMessageID)
	assert.Equal(t, "earlier", r.Shown.PreviewID)
}

func TestAStreamThatFailsCarriesWhatItShowedToTheNextModel(t *testing.T) {
	out := &screen{}
	acts := streamingActs(out, &writer{words: words(30, "word"), pace: 10 * time.Millisecond, failAfter: 20}, pipeline.StreamPreview)
	_, err := turnResult(t, acts, streamReq)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, pipeline.ErrTimeout, app.Type())
	var shown pipeline.Shown
	require.NoError(t, app.Details(&shown))
	assert.Equal(t, "msg-1", shown.PreviewID)
	assert.NotEmpty(t, shown.Text)
}

func TestAStoppedStreamKeepsItsPreviewAndSaysSo(t *testing.T) {
	out := &screen{}
	background, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := streamingActs(out, &writer{words: words(40, "word"), pace: 10 * time.Millisecond, cancelAfter: 20, cancel: cancel}, pipeline.StreamPreview)
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	acts.Store = db
	env := newActivityEnv(acts)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: background})
	_, err = env.ExecuteActivity(acts.AgentTurn, streamReq)
	require.Error(t, err)
	entry, err := db.SessionEntry(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	kept, err := db.Recent(context.Background(), entry.TranscriptID, 10)
	require.NoError(t, err)
	require.Len(t, kept, 2, "the user's text and the stopped answer")
	assert.Equal(t, "assistant", kept[1].Role)
	assert.True(t, strings.HasSuffix(kept[1].Body, pipeline.StoppedMark), "the transcript holds what the user saw: %q", kept[1].Body)
	require.Len(t, out.posted, 1)
	require.NotEmpty(t, out.edits)
	last := out.edits[len(out.edits)-1]
	assert.True(t, strings.HasSuffix(last.Text, pipeline.StoppedMark), "%q", last.Text)
	assert.True(t, strings.HasPrefix(last.Text, "word word"), "what was written stays")
}

// A worker that died right after sending a block, before its heartbeat
// reached Temporal: the store recorded the block as it was sent, and the
// next attempt continues after it.
func TestTheStoreRecordsEachBlockAsItIsSent(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	out := &screen{}
	background, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &writer{words: paragraphs(6), pace: 2 * time.Millisecond, cancelAfter: 100, cancel: cancel}
	acts := streamingActs(out, first, pipeline.StreamBlocks)
	acts.Store = db
	env := newActivityEnv(acts)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: background})
	_, err = env.ExecuteActivity(acts.AgentTurn, streamReq)
	require.Error(t, err, "the first attempt died mid-answer")
	require.Len(t, out.posted, 1, "after one block")

	second := &writer{words: paragraphs(6)[90:], pace: time.Millisecond}
	acts.Models = only{second}
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	require.Len(t, second.prompts, 1)
	last := second.prompts[0].Messages[len(second.prompts[0].Messages)-1]
	assert.Equal(t, "assistant", last.Role, "the second attempt continues the answer")
	assert.Equal(t, strings.TrimSpace(out.posted[0].Text), last.Text)
	assert.True(t, strings.HasPrefix(r.Reply, out.posted[0].Text))
	assert.Equal(t, "msg-1", r.Shown.Blocks[0])
}

// A block longer than one message (a code block the coalescer held
// whole) is not sent, nor anything after it: the final delivery chunks
// the rest fence-safe.
func TestABlockTooLongForAMessageIsLeftToTheDelivery(t *testing.T) {
	out := &screen{}
	code := []string{"Intro ", "paragraph ", "here.\n\n", "```\n"}
	for i := 0; i < 300; i++ {
		code = append(code, fmt.Sprintf("line %d\n", i))
	}
	code = append(code, "```\n\n", "Outro.")
	acts := streamingActs(out, &writer{words: append(paragraphs(2)[:59], code...), pace: time.Millisecond}, pipeline.StreamBlocks)
	acts.Settings.ChunkLimit = 1000
	r, err := turnResult(t, acts, streamReq)
	require.NoError(t, err)
	require.NotEmpty(t, out.posted, "the paragraphs before the code went as a block")
	for _, d := range out.posted {
		assert.LessOrEqual(t, len([]rune(d.Text)), 1000, "no block longer than a message")
		assert.NotContains(t, d.Text, "line 299")
	}
	require.NotNil(t, r.Shown)
	assert.Contains(t, pipeline.AfterShown(r.Reply, r.Shown.Text), "line 299", "the code block goes with the final delivery")
}

// The coalescer scans what it holds at each delta, so a code fence that
// stays open is held at most one message long: past that it could only
// end as a block too long to send, and the rest is left to the final
// delivery instead of being scanned again at every delta.
func TestAnOpenFenceIsHeldNoLongerThanAMessage(t *testing.T) {
	p := &presenter{a: &Activities{Logger: slog.Default()}, ctx: context.Background(), out: &screen{}, req: streamReq,
		live: &liveAnswer{}, cfg: Streaming{}.withDefaults(), mode: pipeline.StreamBlocks, limit: 1000}
	p.blocks = pipeline.BlockCoalescer{Min: blockMin, Max: blockMax}
	answer := "```\n"
	for i := 0; i < 2000; i++ {
		answer += fmt.Sprintf("line %d\n", i)
		p.grew(context.Background(), answer)
		require.LessOrEqual(t, len([]rune(p.blocks.Pending())), 1000+len("line 9999\n"), "held past a message at line %d", i)
	}
	assert.True(t, p.blocksOff)
	assert.Empty(t, p.queued)
}
