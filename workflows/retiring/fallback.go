package retiring

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// chain is the models to try for a turn: the one the user chose with
// /model (strict: no fallback), else the configured chain.
func (s *turns) chain() (models []string, strict bool) {
	if a := s.st.Active; a != nil && a.Options != nil && a.Options.Model != "" {
		return []string{a.Options.Model}, true // a /model directive, for this turn
	}
	if s.st.ModelOverride != "" {
		return []string{s.st.ModelOverride}, true
	}
	return s.settings.Models, false
}

// askModels runs one model step, one activity per model attempt so the
// fallback chain shows in history. Models on cooldown are skipped; when
// every model failed in a way that may pass, the step waits for the first
// cooldown to end and goes round again, up to TurnAttempts rounds.
func (s *turns) askModels(ctx workflow.Context, req pipeline.TurnRequest, rec *TurnRecord) (pipeline.TurnResult, error) {
	models, strict := s.chain()
	var lastErr error
	losses := 0 // workers lost by this step's attempts (askModel)
	rounds := max(s.settings.TurnAttempts, 1)
	for round := 1; round <= rounds; round++ {
		candidates := s.notCooling(models, strict)
		if len(candidates) == 0 {
			// Everything is cooling down: wait for the first to be ready.
			first := s.firstReady(models)
			if err := s.sleep(ctx, first.Until.Sub(workflow.Now(ctx)), "all models cooling down; "+first.Model+" is ready in"); err != nil {
				return pipeline.TurnResult{}, err
			}
			candidates = []string{first.Model}
		}
		for _, model := range candidates {
			req.Model = model
			result, err := s.askModel(ctx, &req, rec, &losses)
			if err == nil {
				s.modelAttempted(model, "")
				s.cooledDown(model)
				return result, nil
			}
			lastErr = err
			if ctx.Err() != nil {
				return pipeline.TurnResult{}, err
			}
			if s.v.promises && errorType(err) == pipeline.ErrToolResultsMissing {
				// Every model would miss the same results.
				return pipeline.TurnResult{}, err
			}
			typ := modelErrorType(err)
			s.modelAttempted(model, typ)
			rec.Fallback = append(rec.Fallback, model+": "+typ)
			if pipeline.MovesToNextModel(typ) && !strict {
				s.count(MetricFallbacks, map[string]string{"reason": typ})
			}
			if pipeline.CoolsDown(typ) {
				s.coolDown(model, nextRetryDelay(err), workflow.Now(ctx))
			}
			if !pipeline.MovesToNextModel(typ) || strict {
				break
			}
		}
		if !pipeline.Transient(modelErrorType(lastErr)) || round == rounds {
			break
		}
		if strict {
			if err := s.sleep(ctx, s.cooldownLeft(models[0], workflow.Now(ctx)), "model "+models[0]+" cooling down; retry in"); err != nil {
				return pipeline.TurnResult{}, err
			}
		}
	}
	return pipeline.TurnResult{}, lastErr
}

// maxWorkerLosses bounds the attempts of one model step that lose their
// worker (askModel) before a loss counts as the model's Timeout, as it did
// before changeStream: a step that takes its worker down every time (out
// of memory on a huge prompt, say) must still end. The most it waits is
// that many heartbeat timeouts (REPLYFLOW_TURN_HEARTBEAT_TIMEOUT each).
const maxWorkerLosses = 5

// askModel asks one model for the step. An attempt whose worker was lost
// (its heartbeat stopped: the process was killed, ran out of memory, its
// machine went away) says nothing about the model, so with changeStream
// the same model is asked again, on whichever worker takes the task, up to
// maxWorkerLosses a step, without costing the turn one of its
// TurnAttempts rounds: a turn must finish after restarts without asking
// the user again, even when several workers die in a row under it. What a
// failed attempt had shown (a preview, blocks) goes to the next one.
func (s *turns) askModel(ctx workflow.Context, req *pipeline.TurnRequest, rec *TurnRecord, losses *int) (pipeline.TurnResult, error) {
	for {
		result, err := s.modelAttempt(ctx, *req, len(rec.Fallback)+1+*losses)
		if err == nil || ctx.Err() != nil {
			return result, err
		}
		if shown := shownIn(err); s.v.stream && shown != nil {
			// The attempt streamed before it failed (a worker died, the
			// provider broke off): the next one finishes what the user
			// already sees.
			req.Shown = shown
			if a := s.st.Active; a != nil {
				a.Shown = shown
			}
		}
		if !s.v.stream || !(workerLost(err) || (s.v.promises && errorType(err) == pipeline.ErrWorkerStopped)) || *losses >= maxWorkerLosses {
			return result, err
		}
		*losses++
		s.log.Warn("The worker running a model step was lost (its heartbeat stopped); asking the same model again on another worker",
			"turn_id", req.TurnID, "model", req.Model, "step", req.Step+1, "losses", *losses, "max", maxWorkerLosses)
	}
}

// workerLost: the attempt failed because its worker stopped heartbeating
// (a worker that stops in order says so itself: ErrWorkerStopped),
// not because of anything the model did (a model too slow for the turn
// is a start-to-close timeout, and its failures are ApplicationErrors).
func workerLost(err error) bool {
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT
}

func (s *turns) modelAttempt(ctx workflow.Context, req pipeline.TurnRequest, attempt int) (pipeline.TurnResult, error) {
	summary := fmt.Sprintf("turn %d step %d: %s", s.st.TurnSeq, req.Step+1, req.Model)
	if attempt > 1 {
		summary += fmt.Sprintf(" (attempt %d)", attempt)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    s.settings.TurnTimeout.D(),
		ScheduleToCloseTimeout: s.settings.TurnTimeout.D() + queueAllowance,
		HeartbeatTimeout:       s.settings.TurnHeartbeatTimeout.D(),
		// One attempt per activity: the workflow decides what comes next
		// (another model, a cooldown, a reset), and history shows it.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:     summary,
	})
	var result pipeline.TurnResult
	err := workflow.ExecuteActivity(ctx, pipeline.ActivityAgentTurn, req).Get(ctx, &result)
	return result, err
}

func (s *turns) notCooling(models []string, strict bool) []string {
	if strict {
		return models
	}
	now := workflow.Now(s.ctx)
	var out []string
	for _, m := range models {
		if s.cooldownLeft(m, now) <= 0 {
			out = append(out, m)
		}
	}
	return out
}

func (s *turns) cooldown(model string) *Cooldown {
	for i := range s.st.Cooldowns {
		if s.st.Cooldowns[i].Model == model {
			return &s.st.Cooldowns[i]
		}
	}
	return nil
}

func (s *turns) cooldownLeft(model string, now time.Time) time.Duration {
	if c := s.cooldown(model); c != nil {
		return c.Until.Sub(now)
	}
	return 0
}

func (s *turns) firstReady(models []string) Cooldown {
	var first Cooldown
	for _, m := range models {
		if c := s.cooldown(m); c != nil && (first.Model == "" || c.Until.Before(first.Until)) {
			first = *c
		}
	}
	return first
}

// coolDown puts a model on cooldown: 30 s, 1 min, then 5 min for failures
// in a row, or longer if the provider asked.
func (s *turns) coolDown(model string, retryAfter time.Duration, now time.Time) {
	c := s.cooldown(model)
	if c == nil {
		s.st.Cooldowns = append(s.st.Cooldowns, Cooldown{Model: model})
		c = &s.st.Cooldowns[len(s.st.Cooldowns)-1]
	}
	c.Level++
	c.Until = now.Add(pipeline.CooldownFor(c.Level, pipeline.Duration(retryAfter)).D())
	s.log.Warn("Model cooling down", "model", model, "until", c.Until, "level", c.Level)
}

// cooledDown forgets a model's cooldown once it answered.
func (s *turns) cooledDown(model string) {
	kept := s.st.Cooldowns[:0]
	for _, c := range s.st.Cooldowns {
		if c.Model != model {
			kept = append(kept, c)
		}
	}
	s.st.Cooldowns = kept
}

func (s *turns) sleep(ctx workflow.Context, d time.Duration, summary string) error {
	if d <= 0 {
		return nil
	}
	return workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary + " " + d.Round(time.Second).String()}).Get(ctx, nil)
}

// modelErrorType is the taxonomy type of a failed model attempt. A failure
// that carries none (the worker stopped, the attempt was lost) counts as a
// Timeout: the attempt did not complete, and another may.
func modelErrorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch t := app.Type(); t {
		case pipeline.ErrRateLimited, pipeline.ErrOverloaded, pipeline.ErrTimeout, pipeline.ErrAuth, pipeline.ErrBilling,
			pipeline.ErrContextOverflow, pipeline.ErrContentFilter, pipeline.ErrModelNotFound, pipeline.ErrFormat:
			return t
		}
	}
	return pipeline.ErrTimeout
}

// shownIn is what a failed model attempt had shown: in a model error's
// details, or in the last heartbeat of an attempt that timed out.
func shownIn(err error) *pipeline.Shown {
	var shown pipeline.Shown
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() && app.Details(&shown) == nil && !shown.Empty() {
		return &shown
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.HasLastHeartbeatDetails() && timeout.LastHeartbeatDetails(&shown) == nil && !shown.Empty() {
		return &shown
	}
	return nil
}

func nextRetryDelay(err error) time.Duration {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.NextRetryDelay()
	}
	return 0
}
