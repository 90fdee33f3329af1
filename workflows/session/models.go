package session

import (
	"slices"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// The model fallback chain's bounds.
const (
	// maxWorkerLosses bounds the attempts of one model step that lose
	// their worker before a loss counts as the model's Timeout: a step
	// that takes its worker down every time (out of memory on a huge
	// prompt, say) must still end. The most it waits for them is that
	// many heartbeat timeouts.
	maxWorkerLosses = 5
	// maxRecordedFailures bounds the failed attempts a turn records for
	// its record (the newest are kept): the rounds and the chain are
	// settings, and a turn has many steps.
	maxRecordedFailures = 32
)

// ModelsState is the model chain's part of the session: the model the
// chat chose with /model, and the models cooling down after a rate limit
// or an overload. Cooldowns hold at most one entry per model of the
// configured chain, plus one for the /model choice and one for a turn's
// own /model directive: a cooldown of any other model is dropped when a
// model cools down.
type ModelsState struct {
	// ModelOverride is the model chosen with /model: strict, no fallback.
	ModelOverride string     `json:"model_override,omitempty"`
	Cooldowns     []Cooldown `json:"cooldowns,omitempty"`
}

// Choose is /model: the chat's turns ask model alone from now on ("" to
// go back to the fallback chain).
func (s *ModelsState) Choose(model string) { s.ModelOverride = model }

// Cooldown keeps a model that was rate limited or overloaded out of the
// chain until Until; Level counts such failures in a row.
type Cooldown struct {
	Model string    `json:"model"`
	Until time.Time `json:"until"`
	Level int       `json:"level"`
}

// StepAttempts is where the model attempts of a turn stand. The turn
// holds it in its state: it makes one when the turn begins, calls First
// at each step, AfterFailure after each failed attempt, and Succeeded
// after an answer. The fields under "the step's" start again at First
// and after a reset; the others live as long as the turn.
type StepAttempts struct {
	// TurnModel is the turn's own /model directive: strict, for this
	// turn only.
	TurnModel string `json:"turn_model,omitempty"`
	// Reset: the turn started a new transcript after a context overflow,
	// which it does once.
	Reset bool `json:"reset,omitempty"`
	// Shown is what the user already sees of the step's answer (a
	// preview, blocks); every attempt's request carries it. A failed
	// attempt that showed something replaces it; between steps the turn
	// sets it.
	Shown *pipeline.Shown `json:"shown,omitempty"`
	// Failed are the turn's failed attempts, "model: type", newest last,
	// at most maxRecordedFailures.
	Failed []string `json:"failed,omitempty"`

	// The step's: the chain it asks, the round under way (from 1), the
	// round's models and which of them is being asked, the workers its
	// attempts lost, and whether its attempts start a new transcript
	// (after a reset).
	Models        []string `json:"models,omitempty"`
	Strict        bool     `json:"strict,omitempty"`
	Round         int      `json:"round,omitempty"`
	Candidates    []string `json:"candidates,omitempty"`
	Asking        int      `json:"asking,omitempty"`
	Losses        int      `json:"losses,omitempty"`
	NewTranscript bool     `json:"new_transcript,omitempty"`
}

// Next is what a turn does after the chain's rule has spoken: TryModel,
// WaitForModel, ResetTranscript or GiveUp.
type Next interface{ isNext() }

// TryModel: ask Model for the step; Apply puts it in the request.
type TryModel struct {
	Model string
	// Shown is what the user already sees of the step's answer.
	Shown *pipeline.Shown
	// NewTranscript: the attempt follows a context reset.
	NewTranscript bool
}

// WaitForModel: every model of the chain is cooling down (or the chosen
// one is); at Until, Then.
type WaitForModel struct {
	Until   time.Time
	Then    TryModel
	Summary string
}

// ResetTranscript: the conversation is too long for the model. The turn
// tells the user Notice, counts a reset, and does Then: its attempts
// start a new transcript.
type ResetTranscript struct {
	Notice string
	Then   Next
}

// GiveUp: the step cannot be answered. The turn fails with ErrType and
// tells the user Reply; a step that was cancelled (ErrType "Canceled")
// has no reply, for the turn was stopped.
type GiveUp struct {
	Reply   string
	ErrType string
}

func (TryModel) isNext()        {}
func (WaitForModel) isNext()    {}
func (ResetTranscript) isNext() {}
func (GiveUp) isNext()          {}

// Apply puts the attempt's model, what is shown and the transcript reset
// in req; a new transcript the turn asked for itself (/new) stays asked.
func (t TryModel) Apply(req *pipeline.TurnRequest) {
	req.Model, req.Shown = t.Model, t.Shown
	req.NewTranscript = req.NewTranscript || t.NewTranscript
}

// Chain is the models to try for a turn: the turn's own /model
// directive, else the chat's /model choice (strict: no fallback), else
// the configured chain.
func (s *ModelsState) Chain(env Env, turnModel string) (models []string, strict bool) {
	if turnModel != "" {
		return []string{turnModel}, true
	}
	if s.ModelOverride != "" {
		return []string{s.ModelOverride}, true
	}
	return env.Settings.Models, false
}

// First begins a step: the first model of the chain that is not cooling
// down, or a wait for the first to be ready.
func (s *ModelsState) First(env Env, t *StepAttempts) Next {
	return s.begin(env, t, false)
}

// begin starts the step's attempts over on the chain as it stands.
func (s *ModelsState) begin(env Env, t *StepAttempts, newTranscript bool) Next {
	models, strict := s.Chain(env, t.TurnModel)
	t.Models, t.Strict = slices.Clone(models), strict
	t.Round, t.Candidates, t.Asking, t.Losses, t.NewTranscript = 0, nil, 0, 0, newTranscript
	if len(t.Models) == 0 {
		return GiveUp{Reply: pipeline.ReplyNoModel(pipeline.ErrModelNotFound), ErrType: pipeline.ErrModelNotFound}
	}
	return s.startRound(env, t)
}

// Succeeded answers a step's answer: its model's cooldown is forgotten.
func (s *ModelsState) Succeeded(model string) {
	s.Cooldowns = slices.DeleteFunc(s.Cooldowns, func(c Cooldown) bool { return c.Model == model })
}

// AfterFailure answers a failed attempt of the step (the model
// t.Candidates[t.Asking]): the same model again after a lost worker, the
// next model, a wait, a reset, or the end of the step. A turn that was
// stopped ends as stopped before asking.
func (s *ModelsState) AfterFailure(env Env, t *StepAttempts, f *Failure) Next {
	if t.Round == 0 || t.Asking >= len(t.Candidates) {
		env.logger().Warn("A model failure arrived outside a step; beginning the step", "error_type", f.Type)
		return s.First(env, t)
	}
	model := t.Candidates[t.Asking]
	if !f.Shown.Empty() {
		// The attempt streamed before it failed: the next one finishes
		// what the user already sees.
		t.Shown = f.Shown
	}
	switch {
	case f.Type == failureCanceled:
		return GiveUp{ErrType: failureCanceled}
	case f.Type == pipeline.ErrToolResultsMissing:
		// Every model would miss the same results.
		return GiveUp{Reply: pipeline.ReplyToolResultsMissing, ErrType: f.Type}
	case lostWorker(f) && t.Losses < maxWorkerLosses:
		// A lost worker says nothing about the model: the same model
		// again, on whichever worker takes the task, without costing
		// the step a round, so a turn outlives restarts.
		t.Losses++
		env.logger().Warn("The worker running a model step was lost; asking the same model again",
			"model", model, "losses", t.Losses, "max", maxWorkerLosses)
		return t.try()
	}
	errType := modelErrorType(f)
	t.record(model, errType)
	if pipeline.CoolsDown(errType) {
		s.coolDown(env, t, model, f.RetryAfter)
	}
	if errType == pipeline.ErrContextOverflow {
		return s.reset(env, t)
	}
	// A chosen model's round holds it alone: it has no next model.
	if pipeline.MovesToNextModel(errType) && t.Asking+1 < len(t.Candidates) {
		t.Asking++
		return t.try()
	}
	if !pipeline.Transient(errType) || t.Round >= max(env.Settings.TurnAttempts, 1) {
		return GiveUp{Reply: failureReply(errType), ErrType: errType}
	}
	return s.startRound(env, t)
}

// reset starts the step again on a new transcript, once a turn; a
// second overflow ends it.
func (s *ModelsState) reset(env Env, t *StepAttempts) Next {
	if t.Reset {
		return GiveUp{Reply: failureReply(pipeline.ErrContextOverflow), ErrType: pipeline.ErrContextOverflow}
	}
	t.Reset = true
	return ResetTranscript{Notice: pipeline.ReplyContextReset, Then: s.begin(env, t, true)}
}

// startRound begins the next round: the models not cooling down, in
// chain order. When all are, the round waits for the first to be ready
// and asks it alone. A chosen model has no other to skip to: the first
// round asks it at once, and each later round waits out its cooldown.
func (s *ModelsState) startRound(env Env, t *StepAttempts) Next {
	t.Round++
	t.Asking = 0
	if t.Strict {
		t.Candidates = t.Models
		if left := s.cooldownLeft(t.Models[0], env.Now); t.Round > 1 && left > 0 {
			return WaitForModel{Until: env.Now.Add(left), Then: t.try(), Summary: "model " + t.Models[0] + " cooling down; retry in " + left.Round(time.Second).String()}
		}
		return t.try()
	}
	t.Candidates = slices.DeleteFunc(slices.Clone(t.Models), func(m string) bool { return s.cooldownLeft(m, env.Now) > 0 })
	if len(t.Candidates) > 0 {
		return t.try()
	}
	first := s.firstReady(t.Models)
	t.Candidates = []string{first.Model}
	wait := first.Until.Sub(env.Now)
	return WaitForModel{Until: first.Until, Then: t.try(), Summary: "all models cooling down; " + first.Model + " is ready in " + wait.Round(time.Second).String()}
}

// try is the attempt of the model being asked.
func (t *StepAttempts) try() TryModel {
	return TryModel{Model: t.Candidates[t.Asking], Shown: t.Shown, NewTranscript: t.NewTranscript}
}

// after are the round's models after the one being asked: an attempt may
// decline for one of them that is able to (pipeline.ErrImagesUnsupported).
func (t *StepAttempts) after() []string {
	if t.Asking+1 >= len(t.Candidates) {
		return nil
	}
	return slices.Clone(t.Candidates[t.Asking+1:])
}

func (t *StepAttempts) record(model, errType string) {
	t.Failed = append(t.Failed, model+": "+errType)
	if over := len(t.Failed) - maxRecordedFailures; over > 0 {
		t.Failed = t.Failed[over:]
	}
}

// coolDown puts a model on cooldown: 30 s, 1 min, then 5 min for
// failures in a row, or longer if the provider asked. Cooldowns of
// models the session no longer asks are dropped, which keeps one entry
// per model of the chain, the /model choice and the turn's directive.
func (s *ModelsState) coolDown(env Env, t *StepAttempts, model string, retryAfter time.Duration) {
	s.Cooldowns = slices.DeleteFunc(s.Cooldowns, func(c Cooldown) bool {
		return !slices.Contains(env.Settings.Models, c.Model) && c.Model != s.ModelOverride && c.Model != t.TurnModel
	})
	c := s.cooldown(model)
	if c == nil {
		s.Cooldowns = append(s.Cooldowns, Cooldown{Model: model})
		c = &s.Cooldowns[len(s.Cooldowns)-1]
	}
	c.Level++
	c.Until = env.Now.Add(pipeline.CooldownFor(c.Level, pipeline.Duration(retryAfter)).D())
	env.logger().Warn("Model cooling down", "model", model, "until", c.Until, "level", c.Level)
}

func (s *ModelsState) cooldown(model string) *Cooldown {
	for i := range s.Cooldowns {
		if s.Cooldowns[i].Model == model {
			return &s.Cooldowns[i]
		}
	}
	return nil
}

func (s *ModelsState) cooldownLeft(model string, now time.Time) time.Duration {
	if c := s.cooldown(model); c != nil {
		return c.Until.Sub(now)
	}
	return 0
}

// firstReady is the cooldown of models that ends first.
func (s *ModelsState) firstReady(models []string) Cooldown {
	var first Cooldown
	for _, m := range models {
		if c := s.cooldown(m); c != nil && (first.Model == "" || c.Until.Before(first.Until)) {
			first = *c
		}
	}
	return first
}

// failureCanceled is the failure type of an effect its turn cancelled.
const failureCanceled = "Canceled"

// lostWorker: the attempt failed because its worker stopped
// heartbeating or was stopping, not because of anything the model did.
func lostWorker(f *Failure) bool {
	return f.Type == FailureWorkerLost || f.Type == pipeline.ErrWorkerStopped
}

// modelErrorType is the taxonomy type of a failed model attempt. A
// failure that carries none (a lost worker past the bound, a timeout)
// counts as a Timeout: the attempt did not complete, and another may.
func modelErrorType(f *Failure) string {
	switch f.Type {
	case pipeline.ErrRateLimited, pipeline.ErrOverloaded, pipeline.ErrTimeout, pipeline.ErrAuth, pipeline.ErrBilling,
		pipeline.ErrContextOverflow, pipeline.ErrContentFilter, pipeline.ErrModelNotFound, pipeline.ErrFormat, pipeline.ErrImagesUnsupported:
		return f.Type
	}
	return pipeline.ErrTimeout
}

// failureReply is what the user is told when a step's models failed
// with errType.
func failureReply(errType string) string {
	switch errType {
	case pipeline.ErrFormat:
		return pipeline.ReplyFormatError
	case pipeline.ErrContentFilter:
		return pipeline.ReplyContentFilter
	}
	return pipeline.ReplyNoModel(errType)
}
