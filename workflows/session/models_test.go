package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

const modelA, modelB = "openai/a", "anthropic/b"

// chainEnv is an Env at d whose chain is a then b, three rounds a step.
func chainEnv(d time.Duration) Env {
	env := envAt(d)
	env.Settings.Models = []string{modelA, modelB}
	env.Settings.TurnAttempts = 3
	return env
}

func failure(errType string) *Failure { return &Failure{Type: errType, Message: "scripted"} }

func try(model string) TryModel { return TryModel{Model: model} }

func TestEachFailureKindDecidesTheNextAttempt(t *testing.T) {
	tests := []struct {
		errType  string
		next     Next
		cooldown bool
		failed   []string
	}{
		{errType: pipeline.ErrRateLimited, next: try(modelB), cooldown: true, failed: []string{modelA + ": RateLimited"}},
		{errType: pipeline.ErrOverloaded, next: try(modelB), cooldown: true, failed: []string{modelA + ": Overloaded"}},
		{errType: pipeline.ErrTimeout, next: try(modelB), failed: []string{modelA + ": Timeout"}},
		{errType: pipeline.ErrAuth, next: try(modelB), failed: []string{modelA + ": Auth"}},
		{errType: pipeline.ErrBilling, next: try(modelB), failed: []string{modelA + ": Billing"}},
		{errType: pipeline.ErrModelNotFound, next: try(modelB), failed: []string{modelA + ": ModelNotFound"}},
		{errType: pipeline.ErrImagesUnsupported, next: try(modelB), failed: []string{modelA + ": ImagesUnsupported"}},
		{errType: "SomethingElse", next: try(modelB), failed: []string{modelA + ": Timeout"}},
		{errType: pipeline.ErrFormat, next: GiveUp{Reply: pipeline.ReplyFormatError, ErrType: pipeline.ErrFormat}, failed: []string{modelA + ": Format"}},
		{errType: pipeline.ErrContentFilter, next: GiveUp{Reply: pipeline.ReplyContentFilter, ErrType: pipeline.ErrContentFilter}, failed: []string{modelA + ": ContentFilter"}},
		{errType: pipeline.ErrContextOverflow, next: ResetTranscript{Notice: pipeline.ReplyContextReset, Then: TryModel{Model: modelA, NewTranscript: true}}, failed: []string{modelA + ": ContextOverflow"}},
		{errType: pipeline.ErrToolResultsMissing, next: GiveUp{Reply: pipeline.ReplyToolResultsMissing, ErrType: pipeline.ErrToolResultsMissing}},
		{errType: failureCanceled, next: GiveUp{ErrType: failureCanceled}},
		{errType: FailureWorkerLost, next: try(modelA)},
		{errType: pipeline.ErrWorkerStopped, next: try(modelA)},
	}
	for _, tt := range tests {
		t.Run(tt.errType, func(t *testing.T) {
			var s ModelsState
			var step StepAttempts
			require.Equal(t, try(modelA), s.First(chainEnv(0), &step))

			assert.Equal(t, tt.next, s.AfterFailure(chainEnv(time.Second), &step, failure(tt.errType)))
			assert.Equal(t, tt.cooldown, s.cooldown(modelA) != nil, "cooldowns: %+v", s.Cooldowns)
			assert.Equal(t, tt.failed, step.Failed)
		})
	}
}

func TestACooldownFollowsTheLadderOrTheProvidersRetryAfter(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	s.First(chainEnv(0), &step)
	s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrRateLimited))
	assert.Equal(t, Cooldown{Model: modelA, Until: t0.Add(30 * time.Second), Level: 1}, s.Cooldowns[0])

	s.First(chainEnv(time.Minute), &step)
	s.AfterFailure(chainEnv(time.Minute), &step, &Failure{Type: pipeline.ErrRateLimited, RetryAfter: 10 * time.Minute})
	assert.Equal(t, Cooldown{Model: modelA, Until: t0.Add(11 * time.Minute), Level: 2}, s.Cooldowns[0], "the provider asked for longer than the ladder")

	s.Succeeded(modelA)
	assert.Empty(t, s.Cooldowns, "an answer forgets the cooldown")
}

func TestAModelCoolingDownIsSkippedAtTheStepsStart(t *testing.T) {
	s := ModelsState{Cooldowns: []Cooldown{{Model: modelA, Until: t0.Add(time.Minute), Level: 1}}}
	var step StepAttempts
	assert.Equal(t, try(modelB), s.First(chainEnv(0), &step))
	assert.Equal(t, try(modelA), s.First(chainEnv(time.Minute), &step), "ready again once its cooldown ends")
}

func TestWhenEveryModelCoolsTheStepWaitsForTheFirstReady(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	require.Equal(t, try(modelA), s.First(chainEnv(0), &step))
	require.Equal(t, try(modelB), s.AfterFailure(chainEnv(time.Second), &step, failure(pipeline.ErrRateLimited)))

	next := s.AfterFailure(chainEnv(2*time.Second), &step, &Failure{Type: pipeline.ErrOverloaded, RetryAfter: time.Minute})
	wait, ok := next.(WaitForModel)
	require.True(t, ok, "next: %#v", next)
	assert.Equal(t, t0.Add(31*time.Second), wait.Until, "a is ready first")
	assert.Equal(t, try(modelA), wait.Then)
	assert.Equal(t, 2, step.Round)

	next = s.AfterFailure(chainEnv(31*time.Second), &step, failure(pipeline.ErrRateLimited))
	assert.Equal(t, WaitForModel{Until: t0.Add(62 * time.Second), Then: try(modelB), Summary: "all models cooling down; " + modelB + " is ready in 31s"}, next,
		"a round after a wait asks only the model that was ready; the next waits for b")
	assert.Equal(t, 3, step.Round)

	assert.Equal(t, GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrOverloaded), ErrType: pipeline.ErrOverloaded},
		s.AfterFailure(chainEnv(62*time.Second), &step, failure(pipeline.ErrOverloaded)), "the rounds are used")
}

func TestAStepEndsWhenItsRoundsAreUsed(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	asked := []string{s.First(chainEnv(0), &step).(TryModel).Model}
	var last Next
	for i := 1; i < 10; i++ {
		last = s.AfterFailure(chainEnv(time.Duration(i)*time.Second), &step, failure(pipeline.ErrTimeout))
		try, ok := last.(TryModel)
		if !ok {
			break
		}
		asked = append(asked, try.Model)
	}
	assert.Equal(t, []string{modelA, modelB, modelA, modelB, modelA, modelB}, asked, "three rounds of the chain")
	assert.Equal(t, GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrTimeout), ErrType: pipeline.ErrTimeout}, last)
	assert.Len(t, step.Failed, 6)
}

func TestAFailureThatWaitingCannotMendEndsTheStepAfterTheChain(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	s.First(chainEnv(0), &step)
	require.Equal(t, try(modelB), s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrAuth)))
	assert.Equal(t, GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrBilling), ErrType: pipeline.ErrBilling},
		s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrBilling)), "no second round after a failure that is not transient")
}

func TestAChosenModelIsStrict(t *testing.T) {
	tests := []struct {
		name      string
		override  string
		turnModel string
		chain     string
	}{
		{name: "the chat's /model", override: modelB, chain: modelB},
		{name: "the turn's directive wins over the chat's choice", override: modelB, turnModel: "demo/c", chain: "demo/c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ModelsState{ModelOverride: tt.override}
			step := StepAttempts{TurnModel: tt.turnModel}
			models, strict := s.Chain(chainEnv(0), tt.turnModel)
			assert.Equal(t, []string{tt.chain}, models)
			assert.True(t, strict)

			require.Equal(t, try(tt.chain), s.First(chainEnv(0), &step))
			assert.Equal(t, GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrAuth), ErrType: pipeline.ErrAuth},
				s.AfterFailure(chainEnv(time.Second), &step, failure(pipeline.ErrAuth)), "no fallback")
		})
	}
}

func TestAChosenModelWaitsOutItsCooldownBetweenRounds(t *testing.T) {
	s := ModelsState{ModelOverride: modelB, Cooldowns: []Cooldown{{Model: modelB, Until: t0.Add(time.Hour), Level: 3}}}
	var step StepAttempts
	require.Equal(t, try(modelB), s.First(chainEnv(0), &step), "the first round asks it at once")

	next := s.AfterFailure(chainEnv(time.Second), &step, failure(pipeline.ErrRateLimited))
	assert.Equal(t, WaitForModel{Until: t0.Add(time.Second + 5*time.Minute), Then: try(modelB), Summary: "model " + modelB + " cooling down; retry in 5m0s"}, next)
	assert.Equal(t, try(modelB), s.AfterFailure(chainEnv(time.Second+5*time.Minute), &step, failure(pipeline.ErrTimeout)), "a timeout does not cool: no wait")
}

func TestALostWorkerAsksTheSameModelAgainWithinItsBound(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	s.First(chainEnv(0), &step)
	for i := range maxWorkerLosses {
		lost := failure(FailureWorkerLost)
		if i%2 == 1 {
			lost = failure(pipeline.ErrWorkerStopped)
		}
		require.Equal(t, try(modelA), s.AfterFailure(chainEnv(0), &step, lost), "loss %d", i+1)
	}
	assert.Equal(t, 1, step.Round, "losses cost the step no round")
	assert.Empty(t, step.Failed)

	assert.Equal(t, try(modelB), s.AfterFailure(chainEnv(0), &step, failure(FailureWorkerLost)), "past the bound a loss is the model's timeout")
	assert.Equal(t, []string{modelA + ": Timeout"}, step.Failed)
	assert.Equal(t, try(modelA), s.AfterFailure(chainEnv(0), &step, failure(FailureWorkerLost)), "the bound is the step's, across its models: b's loss ends the round")
	assert.Equal(t, []string{modelA + ": Timeout", modelB + ": Timeout"}, step.Failed)
	assert.Equal(t, 2, step.Round)

	s.First(chainEnv(0), &step)
	assert.Equal(t, try(modelA), s.AfterFailure(chainEnv(0), &step, failure(FailureWorkerLost)), "a new step starts the count again")
}

func TestWhatAFailedAttemptShowedGoesToTheNextAttempts(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	s.First(chainEnv(0), &step)
	shown := &pipeline.Shown{Mode: pipeline.StreamMode("preview"), PreviewID: "p1", Text: "The answer is"}
	lost := failure(FailureWorkerLost)
	lost.Shown = shown
	assert.Equal(t, TryModel{Model: modelA, Shown: shown}, s.AfterFailure(chainEnv(0), &step, lost))
	assert.Equal(t, TryModel{Model: modelB, Shown: shown}, s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrRateLimited)),
		"the next model too; an attempt that showed nothing keeps what the user sees")

	reset := s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrContextOverflow))
	assert.Equal(t, TryModel{Model: modelB, Shown: shown, NewTranscript: true}, reset.(ResetTranscript).Then, "and the attempts after a reset (a still cools)")
}

func TestAContextOverflowResetsOnceATurn(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	s.First(chainEnv(0), &step)
	reset, ok := s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrContextOverflow)).(ResetTranscript)
	require.True(t, ok)
	assert.Equal(t, pipeline.ReplyContextReset, reset.Notice)
	assert.Equal(t, TryModel{Model: modelA, NewTranscript: true}, reset.Then)
	assert.Equal(t, TryModel{Model: modelB, NewTranscript: true}, s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrTimeout)),
		"every attempt after the reset starts the new transcript")

	require.Equal(t, try(modelA), s.First(chainEnv(time.Minute), &step), "the next step asks on the transcript as it is")
	assert.Equal(t, GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrContextOverflow), ErrType: pipeline.ErrContextOverflow},
		s.AfterFailure(chainEnv(time.Minute), &step, failure(pipeline.ErrContextOverflow)), "a second overflow in the turn ends it")
}

func TestApplyPutsTheAttemptInTheRequest(t *testing.T) {
	shown := &pipeline.Shown{PreviewID: "p1"}
	req := pipeline.TurnRequest{NewTranscript: true}
	TryModel{Model: modelB, Shown: shown}.Apply(&req)
	assert.Equal(t, pipeline.TurnRequest{Model: modelB, Shown: shown, NewTranscript: true}, req, "a /new the turn asked for stays asked")
}

func TestCooldownsKeepOneEntryPerModelTheSessionAsks(t *testing.T) {
	s := ModelsState{Cooldowns: []Cooldown{
		{Model: "demo/gone", Until: t0.Add(time.Hour), Level: 1},
		{Model: modelB, Until: t0.Add(-time.Hour), Level: 2},
	}}
	var step StepAttempts
	s.First(chainEnv(0), &step)
	s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrRateLimited))
	s.First(chainEnv(0), &step)
	s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrRateLimited))

	models := make([]string, len(s.Cooldowns))
	for i, c := range s.Cooldowns {
		models[i] = c.Model
	}
	assert.ElementsMatch(t, []string{modelA, modelB}, models, "a model no longer asked is forgotten; b's level carries on")
	assert.Equal(t, 3, s.cooldown(modelB).Level)
}

func TestAnEmptyChainGivesUp(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	assert.Equal(t, GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrModelNotFound), ErrType: pipeline.ErrModelNotFound}, s.First(envAt(0), &step))
}

func TestAFailureOutsideAStepBeginsOne(t *testing.T) {
	var s ModelsState
	var step StepAttempts
	assert.Equal(t, try(modelA), s.AfterFailure(chainEnv(0), &step, failure(pipeline.ErrTimeout)), "no panic on a stray failure")
	assert.Equal(t, 1, step.Round)
}
