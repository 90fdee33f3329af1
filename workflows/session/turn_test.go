package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func turnEnv() Env {
	env := envAt(0)
	env.Settings.Models = []string{"openai/a", "anthropic/b"}
	env.Settings.TurnAttempts = 1
	env.Settings.MaxSteps = 8
	env.Settings.ChunkLimit = 4000
	env.Settings.ReactionClearDelay = pipeline.Duration(time.Minute)
	return env
}

func startOf(msgs ...pipeline.Inbound) TurnStart {
	return TurnStart{Messages: msgs, Refs: refsOf(msgs...), Text: msgs[len(msgs)-1].Text}
}

// only is the one effect of type E among effects.
func only[E any](t *testing.T, effects []Effect) E {
	t.Helper()
	var found []E
	for _, e := range effects {
		if v, ok := e.(E); ok {
			found = append(found, v)
		}
	}
	require.Len(t, found, 1, "effects: %#v", effects)
	return found[0]
}

func emitted[E Event](effects []Effect) []E {
	var out []E
	for _, e := range effects {
		if emit, ok := e.(Emit); ok {
			if v, ok := emit.Event.(E); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

func TestASimpleTurnAsksTheFirstModelDeliversInOneFastChunkAndEnds(t *testing.T) {
	var s TurnState
	env := turnEnv()
	out := s.Begin(env, startOf(msg("1", "u")))
	ask := only[AskModel](t, out)
	assert.Equal(t, "openai/a", ask.Request.Model)
	assert.Equal(t, []string{"1"}, ask.Request.ThinkingOn, "the model step shows ✍️ itself")
	assert.Equal(t, pipeline.ReactionThinking, emitted[ReactionsWanted](out)[0].State)

	out = s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{Reply: "hi there", Model: "openai/a"}})
	last := emitted[LastChunkReady](out)
	require.Len(t, last, 1, "a one-chunk reply's only chunk is its last: it carries ✅")
	assert.True(t, last[0].Deliver.Fast)
	assert.Equal(t, "1", last[0].Deliver.Delivery.ReplyTo)
	assert.Equal(t, pipeline.ReactionDone, last[0].State)

	out = s.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Index: 0, Delivered: pipeline.Delivered{PlatformMessageID: "p1"}})
	ended := emitted[TurnEnded](out)
	require.Len(t, ended, 1)
	assert.Equal(t, outcomeAnswered, ended[0].Record.Outcome)
	assert.Len(t, emitted[Answered](out), 1, "engagement grants sticky credits")
	assert.False(t, s.Running())
	assert.True(t, s.IsBotMessage("p1"))
}

func TestARateLimitedModelFallsBackToTheNext(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Failure: &Failure{Type: pipeline.ErrRateLimited}})
	assert.Equal(t, "anthropic/b", only[AskModel](t, out).Request.Model)
}

// An attempt knows the round's models after its own, so a model that
// cannot take what the turn holds (an image) can decline for one that
// can; the step then asks that one, which has none after it.
func TestAModelThatTakesNoImagesDeclinesForTheNextOfItsRound(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	assert.Equal(t, []string{"anthropic/b"}, ask.Request.NextModels)
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Failure: &Failure{Type: pipeline.ErrImagesUnsupported, NonRetryable: true}})
	next := only[AskModel](t, out).Request
	assert.Equal(t, "anthropic/b", next.Model)
	assert.Empty(t, next.NextModels)
	assert.Equal(t, []string{"openai/a: ImagesUnsupported"}, s.Active.Attempts.Failed, "the reason shows per attempt")
}

func TestATurnWhoseModelsAllFailIsMarkedFailedAndTheUserIsTold(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Failure: &Failure{Type: pipeline.ErrAuth}})
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "anthropic/b", Failure: &Failure{Type: pipeline.ErrAuth}})
	assert.Equal(t, pipeline.ReactionError, emitted[ReactionsWanted](out)[0].State)
	assert.Len(t, emitted[NoticeWanted](out), 1)
	assert.Equal(t, "failed", emitted[TurnEnded](out)[0].Record.Outcome)
}

func TestAChunkThatCannotBeDeliveredParksTheTurnUntilARetry(t *testing.T) {
	var s TurnState
	env := turnEnv()
	env.Settings.ChunkLimit = 20
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{Reply: "first part here.\n\nsecond part here."}})
	first := emitted[LastChunkReady](out)[0].Deliver
	assert.True(t, first.Delivery.Whole, "the first delivery cuts the reply with the platform's rules")

	out = s.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Index: 0, Failure: &Failure{Type: "Unavailable"}})
	again := emitted[LastChunkReady](out)[0].Deliver
	assert.False(t, again.Fast, "after the local attempt, the chunk goes on as an activity")
	assert.Equal(t, first.Delivery.IdempotencyKey, again.Delivery.IdempotencyKey)
	assert.Nil(t, first.Delivery.Answers, "a fast delivery goes out as the turn answers: nothing to say about lateness")
	if assert.NotNil(t, again.Delivery.Answers, "one that may be retried for long says what it answers") {
		assert.Equal(t, "1", again.Delivery.Answers.MessageID)
		assert.Empty(t, again.Delivery.Answers.Text, "never the message's text")
	}

	out = s.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Index: 0, Delivered: pipeline.Delivered{Rest: []string{"second part here."}}})
	second := emitted[LastChunkReady](out)[0].Deliver
	assert.Equal(t, 1, second.Delivery.Index)
	assert.Equal(t, 2, second.Delivery.Total)
	assert.Equal(t, "second part here.", second.Delivery.Text)

	// The SDK's wrapping (activity type, event IDs, the worker's
	// identity) comes first in the message; the cause is the platform's.
	wrapped := "activity error (type: Deliver, scheduledEventID: 31, startedEventID: 32, identity: 4242@a-rather-long-host-name.example@): "
	cause := "telegram: Forbidden: bot was blocked by the user" + strings.Repeat("!", 2*maxFailureText)
	out = s.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Index: 1, Failure: &Failure{Type: "Unavailable", Message: wrapped + cause, Cause: cause}})
	assert.Equal(t, PhaseParked, s.Active.Phase)
	assert.True(t, strings.HasPrefix(s.Last.Error, "delivery of chunk 2/2 failed (Unavailable): telegram: Forbidden: bot was blocked by the user"),
		"inspect shows the failure's own words: %q", s.Last.Error)
	assert.LessOrEqual(t, len(s.Last.Error), 100+maxFailureText, "and no more of them than the bound")
	assert.Equal(t, pipeline.ReactionError, emitted[ReactionsWanted](out)[0].State)
	assert.Empty(t, emitted[TurnEnded](out), "a parked turn waits")

	out = s.Retry(env, RetryAsked{By: "ops"})
	assert.Equal(t, second.Delivery.IdempotencyKey, emitted[LastChunkReady](out)[0].Deliver.Delivery.IdempotencyKey)
}

func TestAnAnswerThatRacedAStopIsNotDelivered(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	stop := s.Stop(env, "aborted")
	assert.Equal(t, Cancel{TurnID: ask.TurnID}, stop[0])
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{Reply: "too late"}})
	assert.Empty(t, emitted[LastChunkReady](out))
	assert.Equal(t, "aborted", emitted[TurnEnded](out)[0].Record.Outcome)
}

func TestToolsThatNeedApprovalWaitForEveryDecisionThenRunInOrder(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	calls := []pipeline.ToolCall{{ID: "c1", Name: "read"}, {ID: "c2", Name: "write", RequiresApproval: true}}
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{ToolCalls: calls}})
	wanted := emitted[ApprovalsWanted](out)
	require.Len(t, wanted, 1)
	assert.Equal(t, "c2", wanted[0].Calls[0].ID)
	assert.Equal(t, PhaseWaiting, s.Active.Phase)

	out = s.Decided(env, ask.TurnID, "c2", &pipeline.ToolResult{CallID: "c2", Name: "write", Output: "rejected", IsError: true})
	run := only[RunTool](t, out)
	assert.Equal(t, "c1", run.Invocation.Call.ID, "calls run in the model's order")
	out = s.ToolDone(env, ToolRan{TurnID: ask.TurnID, Step: 1, Result: pipeline.ToolResult{CallID: "c1", Output: "ok"}})
	next := only[AskModel](t, out)
	require.Len(t, next.Request.Rounds, 1)
	assert.Equal(t, "rejected", next.Request.Rounds[0].Results[1].Output, "the rejected call was never run")
}

func TestMessagesSteeredIntoATurnAreReadByItsNextStepOrGoBackToTheQueue(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	s.Steer([]pipeline.Inbound{msg("2", "u")}, false)
	out := s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: "read"}}}})
	out = s.ToolDone(env, ToolRan{TurnID: ask.TurnID, Step: 1, Result: pipeline.ToolResult{CallID: "c1"}})
	next := only[AskModel](t, out)
	assert.Len(t, next.Request.Messages, 2)

	var other TurnState
	ask = only[AskModel](t, other.Begin(env, startOf(msg("3", "u"))))
	other.Steer([]pipeline.Inbound{msg("4", "u")}, false)
	out = other.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{Reply: "done"}})
	out = other.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Index: 0})
	left := emitted[SteeredLeft](out)
	require.Len(t, left, 1, "a steered message the turn never read is queued, not lost")
	assert.Equal(t, "4", left[0].Messages[0].MessageID)
}

func TestStoppingATurnThatWaitsForApprovalsWithdrawsItsProposals(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: "write", RequiresApproval: true}}}})
	out := s.Stop(env, "aborted")
	assert.Len(t, emitted[WithdrawProposals](out), 1)
	assert.Equal(t, "aborted", emitted[TurnEnded](out)[0].Record.Outcome, "nothing of its own is under way: it ends at once")
	assert.Empty(t, s.Decided(env, ask.TurnID, "c1", nil), "a decision after the stop runs nothing")
}

func TestABacklogMessageATurnNeverReadIsLeftToTheQueueAlone(t *testing.T) {
	var s TurnState
	env := turnEnv()
	ask := only[AskModel](t, s.Begin(env, startOf(msg("1", "u"))))
	s.Steer([]pipeline.Inbound{msg("2", "u")}, true)
	s.Answered(env, ModelAnswered{TurnID: ask.TurnID, Model: "openai/a", Result: pipeline.TurnResult{Reply: "done"}})
	out := s.Delivered(env, ChunkDelivered{TurnID: ask.TurnID, Index: 0})
	assert.Empty(t, emitted[SteeredLeft](out), "steer-backlog queued it already")
}
