package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

// A streamed preview becomes the reply: the first chunk edits it.
func TestTheFirstChunkReplacesTheStreamedPreview(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.ChunkLimit = 16
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{Reply: "a reply long enough for two chunks", Model: req.Model,
				Shown: &pipeline.Shown{Mode: pipeline.StreamPreview, PreviewID: "preview-1", Text: "a reply long"}}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	require.NotEmpty(t, p.steps)
	assert.True(t, p.steps[0].Req.Stream, "the step may stream")
	require.GreaterOrEqual(t, len(p.sent), 2)
	assert.Equal(t, "preview-1", p.sent[0].Replaces, "the first chunk is the preview, edited")
	for _, d := range p.sent[1:] {
		assert.Empty(t, d.Replaces, "the rest are new messages")
	}
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"))
}

// Blocks sent while streaming are not sent again: the reply is what
// follows them.
func TestOnlyWhatFollowsTheBlocksIsDelivered(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{Reply: "Para one.\n\nPara two.", Model: req.Model,
				Shown: &pipeline.Shown{Mode: pipeline.StreamBlocks, Blocks: []string{"b-1"}, Text: "Para one.\n\n"}}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	require.Len(t, p.sent, 1)
	assert.Equal(t, "Para two.", p.sent[0].Text)
	assert.Empty(t, p.sent[0].ReplyTo, "the first block answered the message")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"))
}

// An answer the blocks carried whole needs no delivery, and the turn is
// still answered and marked done.
func TestAnAnswerSentWholeAsBlocksIsDone(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{Reply: "All of it.", Model: req.Model,
				Shown: &pipeline.Shown{Mode: pipeline.StreamBlocks, Blocks: []string{"b-1"}, Text: "All of it."}}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, 10*time.Second)
	run(t, env, nil)

	assert.Empty(t, p.sent)
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"))
	require.NotNil(t, snap)
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, "answered", snap.LastTurn.Outcome)
}

// A model that breaks off mid-stream hands what it showed to the next
// model of the chain, which finishes the same preview.
func TestAFallbackMidStreamFinishesTheSamePreview(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.Models = []string{"openai/a", "anthropic/b"}
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			if req.Model == "openai/a" {
				return pipeline.TurnResult{}, temporal.NewApplicationErrorWithOptions("broke off", pipeline.ErrTimeout, temporal.ApplicationErrorOptions{
					Details: []any{pipeline.Shown{Mode: pipeline.StreamPreview, PreviewID: "preview-1", Text: "Half an"}},
				})
			}
			return pipeline.TurnResult{Reply: "Half an answer, then all of it.", Model: req.Model}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	require.Len(t, p.steps, 2)
	assert.Nil(t, p.steps[0].Req.Shown)
	require.NotNil(t, p.steps[1].Req.Shown, "the second model knows what the first showed")
	assert.Equal(t, "preview-1", p.steps[1].Req.Shown.PreviewID)
	require.Len(t, p.sent, 1)
	assert.Equal(t, "preview-1", p.sent[0].Replaces, "the answer replaces the preview the first model began")
	assert.Equal(t, "Half an answer, then all of it.", p.sent[0].Text)
}

// A muted chat and a heartbeat turn never stream: nothing would finish
// what they showed.
func TestAMutedTurnDoesNotStream(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, ownerInbound("m0", "/send off"))
	signalAt(env, 5*time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	require.NotEmpty(t, p.steps)
	assert.False(t, p.steps[len(p.steps)-1].Req.Stream)
}

// Runs from before changeStream never ask to stream.
func TestRunsBeforeStreamingDoNotStream(t *testing.T) {
	env, p := newEnv(t)
	runsFromBefore(env, changeStream)
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	require.NotEmpty(t, p.steps)
	assert.False(t, p.steps[0].Req.Stream)
}
