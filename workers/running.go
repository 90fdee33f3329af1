package workers

import (
	"context"
	"slices"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// runningActivities is the set of activities a worker is executing, so that
// a stopping worker can say what it waits for. It holds at most one entry
// per activity slot of the worker (the SDK's MaxConcurrentActivityExecutionSize,
// 1,000 by default), each removed when its activity returns.
type runningActivities struct {
	interceptor.WorkerInterceptorBase
	mu      sync.Mutex
	next    uint64
	running map[uint64]string
}

func newRunningActivities() *runningActivities {
	return &runningActivities{running: map[uint64]string{}}
}

func (r *runningActivities) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &trackedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, set: r}
}

// list names each running activity as "<type> for <workflow ID>", sorted.
func (r *runningActivities) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.running))
	for _, name := range r.running {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (r *runningActivities) add(name string) (done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	r.running[id] = name
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.running, id)
	}
}

type trackedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	set *runningActivities
}

func (a *trackedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	defer a.set.add(info.ActivityType.Name + " for " + info.WorkflowExecution.ID)()
	return a.Next.ExecuteActivity(ctx, in)
}
