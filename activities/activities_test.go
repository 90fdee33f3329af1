package activities

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

type fakeOutbound struct {
	mu        sync.Mutex
	reactions []pipeline.ReactionChange
	typing    atomic.Int32
	inFlight  atomic.Int32
	// blockTypingFrom makes typing calls from this number on hang until
	// cancelled, like a slow platform.
	blockTypingFrom int32
	sendErr         error
	sent            []pipeline.Delivery
}

func (f *fakeOutbound) Send(_ context.Context, d pipeline.Delivery) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return "", f.sendErr
	}
	f.sent = append(f.sent, d)
	return "p-1", nil
}

func (f *fakeOutbound) Edit(context.Context, pipeline.Edit) error { return nil }

func (f *fakeOutbound) SetReaction(_ context.Context, r pipeline.ReactionChange) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reactions = append(f.reactions, r)
	return nil
}

func (f *fakeOutbound) reacted() []pipeline.ReactionChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]pipeline.ReactionChange(nil), f.reactions...)
}

func (f *fakeOutbound) Typing(ctx context.Context, _ pipeline.SessionKey, _ string) error {
	if ctx.Err() != nil {
		return ctx.Err() // a real adapter sends nothing on a dead context
	}
	f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	if n := f.typing.Add(1); f.blockTypingFrom > 0 && n >= f.blockTypingFrom {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// slowModel answers once the typing indicator was refreshed a few times.
type slowModel struct{ out *fakeOutbound }

func (slowModel) Name() string { return "test/slow" }

func (m slowModel) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	for m.out.typing.Load() < 3 {
		select {
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return models.Completion{Text: "done"}, nil
}

var session = pipeline.SessionKey{Channel: "webchat", Chat: "room"}

func newActivityEnv(acts *Activities) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return env
}

func TestTypingIntervalPerChannel(t *testing.T) {
	acts := &Activities{TypingInterval: 4 * time.Second, TypingByChannel: map[string]time.Duration{"discord": 8 * time.Second, "quiet": 0}}
	assert.Equal(t, 8*time.Second, acts.typingInterval("discord"))
	assert.Equal(t, time.Duration(0), acts.typingInterval("quiet"), "0 turns typing off for that channel")
	assert.Equal(t, 4*time.Second, acts.typingInterval("webchat"))
}

func TestAgentTurnRefreshesTypingWhileTheModelWorksAndNotAfter(t *testing.T) {
	out := &fakeOutbound{blockTypingFrom: 3}
	acts := &Activities{Models: only{slowModel{out}}, Outbound: map[string]adapters.Outbound{"webchat": out}, TypingInterval: time.Millisecond, Logger: slog.Default()}
	env := newActivityEnv(acts)
	v, err := env.ExecuteActivity(acts.AgentTurn, pipeline.TurnRequest{Session: session, Model: "test/slow", Messages: []pipeline.TurnMessage{{Text: "hi"}}})
	require.NoError(t, err)
	var res pipeline.TurnResult
	require.NoError(t, v.Get(&res))
	assert.Equal(t, pipeline.TurnResult{Reply: "done", Model: "test/slow"}, res)

	assert.Equal(t, int32(3), out.typing.Load())
	assert.Zero(t, out.inFlight.Load(), "no typing call may outlive the turn")
}

func TestDeliverMapsPlatformErrorsToRetryBehaviour(t *testing.T) {
	cases := []struct {
		name         string
		err          error
		typ          string
		nonRetryable bool
		delay        time.Duration
	}{
		{"permanent", &adapters.Error{Kind: adapters.Permanent, Op: "send", Err: errors.New("403")}, "PlatformRejected", true, 0},
		{"rate limited", &adapters.Error{Kind: adapters.RateLimited, RetryAfter: 9 * time.Second, Op: "send"}, "RateLimited", false, 9 * time.Second},
		{"unclassified", errors.New("connection reset"), "PlatformUnavailable", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := &fakeOutbound{sendErr: c.err}
			acts := &Activities{Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
			_, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, pipeline.Delivery{Session: session, Text: "x", Total: 1})
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			assert.Equal(t, c.typ, app.Type())
			assert.Equal(t, c.nonRetryable, app.NonRetryable())
			assert.Equal(t, c.delay, app.NextRetryDelay())
			assert.Contains(t, app.Error(), "session:webchat:room", "the error names the session")
		})
	}
}

func TestUnknownChannelIsNotRetried(t *testing.T) {
	acts := &Activities{Outbound: map[string]adapters.Outbound{}, Logger: slog.Default()}
	_, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, pipeline.Delivery{Session: pipeline.SessionKey{Channel: "telegram", Chat: "1"}})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "ChannelNotConfigured", app.Type())
	assert.True(t, app.NonRetryable())
}

// only is a ModelSource with one model for every name.
type only struct{ models.Model }

func (o only) Get(string) (models.Model, error) { return o.Model, nil }

func TestModelFailuresBecomeTypedApplicationErrors(t *testing.T) {
	out := &fakeOutbound{}
	failing := failingModel{err: &models.Error{Type: pipeline.ErrRateLimited, RetryAfter: 7 * time.Second, Model: "openai/x"}}
	acts := &Activities{Models: only{failing}, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	_, err := newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, pipeline.TurnRequest{Session: session, Model: "openai/x", TurnID: "t1"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrRateLimited, app.Type())
	assert.Equal(t, 7*time.Second, app.NextRetryDelay())
	assert.False(t, app.NonRetryable())
	assert.Contains(t, app.Error(), "session:webchat:room (turn t1)")

	failing.err = &models.Error{Type: pipeline.ErrAuth, Model: "openai/x"}
	acts.Models = only{failing}
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, pipeline.TurnRequest{Session: session, Model: "openai/x"})
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrAuth, app.Type())
	assert.True(t, app.NonRetryable(), "a bad key does not get better by retrying")

	acts.Models = &models.Registry{}
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, pipeline.TurnRequest{Session: session, Model: "nobody/x"})
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrModelNotFound, app.Type())
}

type failingModel struct{ err error }

func (failingModel) Name() string { return "test/failing" }

func (m failingModel) Complete(context.Context, models.Prompt) (models.Completion, error) {
	return models.Completion{}, m.err
}

// waitForThinking answers once the thinking reaction was shown.
type waitForThinking struct{ out *fakeOutbound }

func (waitForThinking) Name() string { return "test/wait" }

func (m waitForThinking) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	for len(m.out.reacted()) == 0 {
		select {
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return models.Completion{Text: "ok"}, nil
}

func TestThinkingIsShownOnlyOnceTheStepOutlastsTheWindow(t *testing.T) {
	req := pipeline.TurnRequest{Session: session, ThreadID: "t1", Text: "hi", ThinkingOn: []string{"m1", "m2"}}

	slow := &fakeOutbound{}
	acts := &Activities{Models: only{waitForThinking{slow}}, Outbound: map[string]adapters.Outbound{"webchat": slow}, ThinkingAfter: time.Millisecond, Logger: slog.Default()}
	_, err := newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	require.NoError(t, err)
	assert.Equal(t, []pipeline.ReactionChange{
		{Session: session, MessageID: "m1", ThreadID: "t1", State: pipeline.ReactionThinking},
		{Session: session, MessageID: "m2", ThreadID: "t1", State: pipeline.ReactionThinking},
	}, slow.reacted())

	fast := &fakeOutbound{}
	acts = &Activities{Models: only{models.Demo{}}, Outbound: map[string]adapters.Outbound{"webchat": fast}, ThinkingAfter: time.Hour, Logger: slog.Default()}
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	require.NoError(t, err)
	assert.Empty(t, fast.reacted(), "a step faster than the window never shows thinking")
}

// cancelAfterThinking stands in for a model that is still working when the
// turn is stopped: once "thinking" shows, the attempt is cancelled.
type cancelAfterThinking struct {
	out    *fakeOutbound
	cancel context.CancelFunc
}

func (cancelAfterThinking) Name() string { return "test/cancelled" }

func (m cancelAfterThinking) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	for len(m.out.reacted()) == 0 {
		select {
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	m.cancel()
	<-ctx.Done()
	return models.Completion{}, ctx.Err()
}

func TestACancelledAttemptTakesBackTheThinkingItShowed(t *testing.T) {
	req := pipeline.TurnRequest{Session: session, ThreadID: "t1", Text: "hi", ThinkingOn: []string{"m1"}}
	out := &fakeOutbound{}
	background, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := &Activities{Models: only{cancelAfterThinking{out, cancel}}, Outbound: map[string]adapters.Outbound{"webchat": out}, ThinkingAfter: time.Millisecond, Logger: slog.Default()}
	env := newActivityEnv(acts)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: background})
	_, err := env.ExecuteActivity(acts.AgentTurn, req)
	require.Error(t, err, "the attempt was cancelled")
	assert.Equal(t, []pipeline.ReactionChange{
		{Session: session, MessageID: "m1", ThreadID: "t1", State: pipeline.ReactionThinking},
		{Session: session, MessageID: "m1", ThreadID: "t1", State: pipeline.ReactionNone},
	}, out.reacted(), "✍️ shown, then taken back when the attempt saw its cancellation")
}

func TestDeliverDoesNotSendAChunkTheStoreSaysWasSent(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	out := &fakeOutbound{}
	acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	delivered := func(key string) (pipeline.Delivered, error) {
		v, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, pipeline.Delivery{Session: session, IdempotencyKey: key, Text: "x", Total: 1})
		if err != nil {
			return pipeline.Delivered{}, err
		}
		var d pipeline.Delivered
		require.NoError(t, v.Get(&d))
		return d, nil
	}

	// An earlier attempt sent it and mapped it, then failed to report.
	require.NoError(t, db.MapMessage(ctx, session.WorkflowID(), "turn-1/0", "p-earlier"))
	d, err := delivered("turn-1/0")
	require.NoError(t, err)
	assert.Equal(t, "p-earlier", d.PlatformMessageID, "the first send's ID")
	assert.Empty(t, out.sent, "the adapter is not called for a mapped chunk")

	d, err = delivered("turn-1/1")
	require.NoError(t, err)
	assert.Equal(t, "p-1", d.PlatformMessageID)
	d, err = delivered("turn-1/1")
	require.NoError(t, err)
	assert.Equal(t, "p-1", d.PlatformMessageID)
	assert.Len(t, out.sent, 1, "a chunk this worker sent is not sent again either")

	require.NoError(t, db.Close())
	_, err = delivered("turn-1/2")
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "StoreUnavailable", app.Type())
	assert.False(t, app.NonRetryable(), "retried until the store answers")
	assert.Len(t, out.sent, 1, "nothing is sent blind")
}
