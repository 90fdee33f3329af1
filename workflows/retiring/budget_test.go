package retiring

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// scheduledActivities records the options of every activity a workflow
// schedules, by activity type.
type scheduledActivities struct {
	interceptor.WorkerInterceptorBase
	mu      sync.Mutex
	options map[string][]workflow.ActivityOptions
}

func (r *scheduledActivities) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &recordingInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, r: r}
}

type recordingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *scheduledActivities
}

func (i *recordingInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&recordingOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, r: i.r})
}

type recordingOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	r *scheduledActivities
}

func (o *recordingOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.r.mu.Lock()
	o.r.options[activityType] = append(o.r.options[activityType], workflow.GetActivityOptions(ctx))
	o.r.mu.Unlock()
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

// Every activity has a hard budget, queueing included: a session never
// waits on one without end, and the gate keeps its promise to answer
// within its timeout even when workers are busy.
func TestEveryActivityHasAScheduleToCloseBudget(t *testing.T) {
	rec := &scheduledActivities{options: map[string][]workflow.ActivityOptions{}}
	env, _ := newEnv(t, gated, toolScript([]pipeline.ToolCall{pay}), func(p *fakePlatform) { p.settings.RequesterMayDecide = true })
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{rec}})
	signalAt(env, time.Second, groupMessage("g1", "alice", "chatter for the gate"))
	mention := groupMessage("g2", "alice", "@bot pay bob")
	mention.MentionsBot = true
	signalAt(env, time.Minute, mention)
	signalAt(env, 2*time.Minute, inbound("c1", "/approve p1"))
	run(t, env, nil)

	for _, typ := range []string{pipeline.ActivityGate, pipeline.ActivityAgentTurn, pipeline.ActivityDeliver, pipeline.ActivityRunTool, pipeline.ActivityEdit} {
		require.NotEmpty(t, rec.options[typ], "the scenario schedules %s", typ)
	}
	for typ, all := range rec.options {
		for _, o := range all {
			assert.Positive(t, o.ScheduleToCloseTimeout, "%s has no schedule-to-close timeout", typ)
		}
	}
	assert.Equal(t, defaultGateTimeout, rec.options[pipeline.ActivityGate][0].ScheduleToCloseTimeout, "the gate's whole budget is its timeout")
}
