package session

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// Runner pacing.
const (
	// localActivityTimeout bounds a local activity (a reaction, settings,
	// a claim): they touch the store or one platform call.
	localActivityTimeout = 10 * time.Second
	// reactionTimeout bounds one reaction: a platform call, one attempt.
	reactionTimeout = 5 * time.Second
	// fastDeliveryTimeout bounds the first chunk's local activity; a
	// slower delivery goes on as an activity.
	fastDeliveryTimeout = 5 * time.Second
	// queueAllowance is how long a model step may wait for a worker on
	// top of its own timeout.
	queueAllowance = time.Minute
	// defaultDeliveryDeadline bounds a chunk's retries when
	// REPLYFLOW_DELIVERY_DEADLINE is unset.
	defaultDeliveryDeadline = 10 * time.Minute
	// activityTimeout bounds a Call that names no timeout.
	activityTimeout = time.Minute
	// defaultCallAttempts bounds the tries of a Call that names none: an
	// edit or a settings write that fails five times is logged, not
	// retried forever.
	defaultCallAttempts = 5
)

// runner does the effects of the parts: the only code of the session that
// starts activities, local activities, timers and coroutines. Each
// effect runs in a coroutine of its own, which appends its outcome to the
// loop's events; the runner holds no state of the session's, only what
// lets it cancel what it started. Its maps are bounded by what runs at
// once: a timer per open window plus the clear timer, the effects of one
// turn.
type runner struct {
	ctx      workflow.Context
	key      pipeline.SessionKey
	settings *pipeline.Settings
	// done receives each effect's outcome; the loop takes them in order.
	done func(Event)
	// timers are the armed timers, each with its arming's generation, so
	// a timer that was moved or disarmed never fires.
	timers map[TimerID]armedTimer
	gen    int
	// turns hold the context of each running turn's effects.
	turns map[string]turnScope
	// running counts effects under way.
	running int
}

type turnScope struct {
	ctx    workflow.Context
	cancel workflow.CancelFunc
}

type armedTimer struct {
	gen    int
	cancel workflow.CancelFunc
}

func newRunner(ctx workflow.Context, key pipeline.SessionKey, settings *pipeline.Settings, done func(Event)) *runner {
	return &runner{ctx: ctx, key: key, settings: settings, done: done, timers: map[TimerID]armedTimer{}, turns: map[string]turnScope{}}
}

// start does one effect. Emit and Publish are the loop's own.
func (r *runner) start(e Effect) {
	switch e := e.(type) {
	case Arm:
		r.arm(e)
	case Disarm:
		if t, ok := r.timers[e.Timer]; ok {
			t.cancel()
			delete(r.timers, e.Timer)
		}
	case Cancel:
		if t, ok := r.turns[e.TurnID]; ok {
			t.cancel()
			delete(r.turns, e.TurnID)
		}
	case ApplyReaction:
		ctx := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: reactionTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		r.await(workflow.ExecuteLocalActivity(ctx, pipeline.ActivitySetReaction, e.Change), nil, func(_ any, f *Failure) Event {
			return ReactionApplied{Change: e.Change, Failure: f}
		})
	case AskModel:
		r.askModel(e)
	case RunTool:
		ctx := workflow.WithActivityOptions(r.turnCtx(e.TurnID), toolOptions(e, r.settings.TurnTimeout.D()))
		r.await(workflow.ExecuteActivity(ctx, pipeline.ActivityRunTool, e.Invocation), new(pipeline.ToolResult), func(out any, f *Failure) Event {
			if f == nil {
				return ToolRan{TurnID: e.TurnID, Step: e.Step, Result: *out.(*pipeline.ToolResult)}
			}
			call := e.Invocation.Call
			return ToolRan{TurnID: e.TurnID, Step: e.Step, Result: pipeline.ToolResult{
				CallID: call.ID, Name: call.Name, Output: failedToolOutput(call, f), IsError: true,
			}}
		})
	case Deliver:
		r.deliver(e)
	case Call:
		r.call(e)
	case Count:
		workflow.GetMetricsHandler(r.ctx).WithTags(e.Tags).Counter(e.Name).Inc(1)
	case Time:
		workflow.GetMetricsHandler(r.ctx).WithTags(e.Tags).Timer(e.Name).Record(e.Took)
	default:
		panic(fmt.Sprintf("session runner: no way to run %T", e))
	}
}

// failedToolOutput is what the model reads of a tool call that failed.
// A call that timed out, or whose worker was lost, may have acted before
// it stopped; unless the tool is read-only (declared to be tried more
// than once), the model is told so, lest it call the tool again and act
// twice.
func failedToolOutput(call pipeline.ToolCall, f *Failure) string {
	cause := cmp.Or(f.Cause, f.Error())
	if (f.Type == "Timeout" || f.Type == FailureWorkerLost) && call.Attempts <= 1 {
		return "the tool's outcome is unknown: " + cause + ", and it may have acted before it stopped. Do not call it again without asking the user."
	}
	return "the tool could not be run: " + cause
}

// arm starts a timer, replacing one of the same name.
func (r *runner) arm(e Arm) {
	if t, ok := r.timers[e.Timer]; ok {
		t.cancel()
	}
	r.gen++
	gen := r.gen
	ctx, cancel := workflow.WithCancel(r.ctx)
	r.timers[e.Timer] = armedTimer{gen: gen, cancel: cancel}
	wait := e.At.Sub(workflow.Now(r.ctx))
	fired := func() {
		if t, ok := r.timers[e.Timer]; ok && t.gen == gen {
			delete(r.timers, e.Timer)
			r.done(TimerFired{Timer: e.Timer, At: e.At})
		}
	}
	if wait <= 0 {
		fired()
		return
	}
	timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: e.Summary})
	workflow.Go(r.ctx, func(c workflow.Context) {
		if timer.Get(c, nil) == nil {
			fired()
		}
	})
}

// turnCtx is the context of a turn's effects, which its Cancel cancels
// together; a turn's next effects after a Cancel get a fresh one.
func (r *runner) turnCtx(turnID string) workflow.Context {
	t, ok := r.turns[turnID]
	if !ok {
		t.ctx, t.cancel = workflow.WithCancel(r.ctx)
		r.turns[turnID] = t
	}
	return t.ctx
}

func (r *runner) askModel(e AskModel) {
	summary := fmt.Sprintf("turn %s step %d: %s", e.TurnID, e.Request.Step+1, e.Request.Model)
	ctx := workflow.WithActivityOptions(r.turnCtx(e.TurnID), workflow.ActivityOptions{
		StartToCloseTimeout:    r.settings.TurnTimeout.D(),
		ScheduleToCloseTimeout: r.settings.TurnTimeout.D() + queueAllowance,
		HeartbeatTimeout:       r.settings.TurnHeartbeatTimeout.D(),
		// One attempt per activity: the turn decides what comes next
		// (another model, a cooldown, a reset), and history shows it.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:     summary,
	})
	r.await(workflow.ExecuteActivity(ctx, pipeline.ActivityAgentTurn, e.Request), new(pipeline.TurnResult), func(out any, f *Failure) Event {
		ev := ModelAnswered{TurnID: e.TurnID, Step: e.Request.Step, Model: e.Request.Model, Failure: f}
		if f == nil {
			ev.Result = *out.(*pipeline.TurnResult)
		}
		return ev
	})
}

func (r *runner) deliver(e Deliver) {
	result := func(out any, f *Failure) Event {
		ev := ChunkDelivered{TurnID: e.TurnID, Index: e.Delivery.Index, Failure: f}
		if f == nil {
			ev.Delivered = *out.(*pipeline.Delivered)
		}
		return ev
	}
	summary := fmt.Sprintf("deliver %d/%d to %s", e.Delivery.Index+1, e.Delivery.Total, r.key.Channel)
	if e.Fast {
		ctx := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: min(fastDeliveryTimeout, r.settings.DeliveryTimeout.D()),
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:             summary,
		})
		r.await(workflow.ExecuteLocalActivity(ctx, pipeline.ActivityDeliver, e.Delivery), new(pipeline.Delivered), result)
		return
	}
	deadline := r.settings.DeliveryDeadline.D()
	if deadline <= 0 {
		deadline = defaultDeliveryDeadline
	}
	ctx := workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    r.settings.DeliveryTimeout.D(),
		ScheduleToCloseTimeout: deadline,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
		Summary:                summary,
	})
	r.await(workflow.ExecuteActivity(ctx, pipeline.ActivityDeliver, e.Delivery), new(pipeline.Delivered), result)
}

func (r *runner) call(e Call) {
	timeout := e.Timeout
	var out any
	if e.Output != nil {
		out = reflect.New(reflect.TypeOf(e.Output).Elem()).Interface()
	}
	answer := func(v any, f *Failure) Event { return Returned{Key: e.Key, Output: v, Failure: f} }
	attempts := e.Attempts
	if attempts <= 0 {
		attempts = defaultCallAttempts
	}
	retry := &temporal.RetryPolicy{MaximumAttempts: attempts}
	if e.Local {
		if timeout <= 0 {
			timeout = localActivityTimeout
		}
		ctx := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: retry, Summary: e.Summary})
		r.await(workflow.ExecuteLocalActivity(ctx, e.Activity, e.Args...), out, answer)
		return
	}
	if timeout <= 0 {
		timeout = activityTimeout
	}
	opts := workflow.ActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: retry, Summary: e.Summary}
	if attempts == 1 {
		opts.ScheduleToCloseTimeout = timeout
	}
	ctx := workflow.WithActivityOptions(r.ctx, opts)
	r.await(workflow.ExecuteActivity(ctx, e.Activity, e.Args...), out, answer)
}

// await waits for f in a coroutine of its own and hands the loop the
// event answer makes of its outcome.
func (r *runner) await(f workflow.Future, out any, answer func(any, *Failure) Event) {
	r.running++
	workflow.Go(r.ctx, func(ctx workflow.Context) {
		defer func() { r.running-- }()
		err := f.Get(ctx, out)
		r.done(answer(out, failureOf(err)))
	})
}

// loadSettings reads the session's settings in a local activity and
// waits for them: nothing of a run goes on without them.
func (r *runner) loadSettings() (pipeline.Settings, error) {
	ctx := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: localActivityTimeout,
		Summary:             "load settings",
	})
	var settings pipeline.Settings
	err := workflow.ExecuteLocalActivity(ctx, pipeline.ActivityLoadSettings, r.key).Get(ctx, &settings)
	return settings, err
}

// publish upserts search attributes, in one event.
func (r *runner) publish(updates []temporal.SearchAttributeUpdate) {
	if err := workflow.UpsertTypedSearchAttributes(r.ctx, updates...); err != nil {
		workflow.GetLogger(r.ctx).Warn("Search attributes not updated; is the namespace missing replyflow's attributes? See deploy/README.md", "error", err)
	}
}

// details sets the markdown the Temporal UI shows as the current details.
func (r *runner) details(markdown string) { workflow.SetCurrentDetails(r.ctx, markdown) }

// Busy is true while an effect is under way.
func (r *runner) Busy() bool { return r.running > 0 }

// failureOf makes an effect's error a Failure, nil for none.
func failureOf(err error) *Failure {
	if err == nil {
		return nil
	}
	f := &Failure{Message: err.Error()}
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &app):
		f.Type, f.NonRetryable, f.RetryAfter, f.Cause = app.Type(), app.NonRetryable(), app.NextRetryDelay(), app.Message()
		var shown pipeline.Shown
		if app.HasDetails() && app.Details(&shown) == nil && !shown.Empty() {
			f.Shown = &shown
		}
	case errors.As(err, &timeout):
		f.Type, f.Cause = "Timeout", "it ran out of time ("+strings.ToLower(strings.TrimPrefix(timeout.TimeoutType().String(), "TIMEOUT_TYPE_"))+")"
		if timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
			f.Type = FailureWorkerLost
		}
		var shown pipeline.Shown
		if timeout.HasLastHeartbeatDetails() && timeout.LastHeartbeatDetails(&shown) == nil && !shown.Empty() {
			f.Shown = &shown
		}
	case errors.As(err, &canceled):
		f.Type = "Canceled"
	}
	return f
}

// FailureWorkerLost: the worker running the effect stopped heartbeating,
// which says nothing of the effect itself.
const FailureWorkerLost = "WorkerLost"

// toolGrace is what a tool's attempt gets beyond the tool's own timeout,
// which the activity applies itself: the attempt reports its timeout as
// the tool's answer before Temporal gives up on it.
const toolGrace = 5 * time.Second

// maxToolAttempts bounds the attempts a tool's declaration may ask for.
const maxToolAttempts = 10

// toolOptions are a tool call's activity options, from its declaration
// (pipeline.ToolCall): a call is made once unless its tool is read-only
// and declares more attempts, an attempt takes at most the tool's own
// timeout, and all of them at most the turn's; the UI names the call by
// its label ("mcp docs.search") or its tool.
func toolOptions(e RunTool, turnTimeout time.Duration) workflow.ActivityOptions {
	call := e.Invocation.Call
	attempt := turnTimeout
	if t := call.Timeout.D() + toolGrace; call.Timeout > 0 && t < attempt {
		attempt = t
	}
	retry := &temporal.RetryPolicy{MaximumAttempts: 1}
	if call.Attempts > 1 {
		retry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: int32(min(call.Attempts, maxToolAttempts))}
	}
	label := call.Label
	if label == "" {
		label = "tool " + call.Name
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout:    attempt,
		ScheduleToCloseTimeout: turnTimeout + queueAllowance,
		RetryPolicy:            retry,
		Summary:                fmt.Sprintf("%s (turn %s step %d)", label, e.TurnID, e.Step+1),
	}
}
