package workers

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/replyflow/replyflow/workers/telemetry"
)

// fakeVisibility answers count queries from sessions it holds, as the
// visibility store would, and records them.
type fakeVisibility struct {
	mu       sync.Mutex
	states   map[string]int64 // ReplyflowState -> open sessions
	pending  []int64          // each open session's ReplyflowPendingProposals
	pollers  map[enumspb.TaskQueueType]int
	fail     error
	queries  []string
	describe int
}

var (
	stateIs    = regexp.MustCompile(`ReplyflowState = "([a-z_]+)"`)
	pendingMin = regexp.MustCompile(`ReplyflowPendingProposals >= (\d+)`)
)

func (f *fakeVisibility) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, req.GetQuery())
	if f.fail != nil {
		return nil, f.fail
	}
	if m := stateIs.FindStringSubmatch(req.GetQuery()); m != nil {
		return &workflowservice.CountWorkflowExecutionsResponse{Count: f.states[m[1]]}, nil
	}
	if m := pendingMin.FindStringSubmatch(req.GetQuery()); m != nil {
		k, _ := strconv.ParseInt(m[1], 10, 64)
		var n int64
		for _, p := range f.pending {
			if p >= k {
				n++
			}
		}
		return &workflowservice.CountWorkflowExecutionsResponse{Count: n}, nil
	}
	return nil, serviceerror.NewInvalidArgument("unexpected query " + req.GetQuery())
}

func (f *fakeVisibility) DescribeTaskQueue(_ context.Context, _ string, t enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describe++
	if f.fail != nil {
		return nil, f.fail
	}
	resp := &workflowservice.DescribeTaskQueueResponse{}
	for range f.pollers[t] {
		resp.Pollers = append(resp.Pollers, &taskqueuepb.PollerInfo{Identity: "worker"})
	}
	return resp, nil
}

// newGaugePage is a metrics handler and a reader of its /metrics page.
func newGaugePage(t *testing.T) (*telemetry.Telemetry, func() string) {
	tel, err := telemetry.New()
	require.NoError(t, err)
	return tel, func() string {
		rec := httptest.NewRecorder()
		tel.Mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
}

// value is the sample of name whose labels include every one of labels;
// -1 when there is none.
func value(page, name string, labels ...string) float64 {
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{([^}]*)\} (\S+)$`)
next:
	for _, m := range line.FindAllStringSubmatch(page, -1) {
		for _, l := range labels {
			if !strings.Contains(","+m[1]+",", ","+l+",") {
				continue next
			}
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		return v
	}
	return -1
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestGaugesCountTheOpenSessionsByStateAndTheirPendingProposals(t *testing.T) {
	fake := &fakeVisibility{
		states:  map[string]int64{"idle": 3, "waiting_user": 2, "delivery_failed": 1},
		pending: []int64{1, 3, 0, 0},
		pollers: map[enumspb.TaskQueueType]int{enumspb.TASK_QUEUE_TYPE_WORKFLOW: 2},
	}
	tel, page := newGaugePage(t)
	g := Gauges{Client: fake, TaskQueue: "replyflow", Metrics: tel.MetricsHandler(), Sessions: true, Logger: quiet,
		Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	require.NoError(t, g.Read(context.Background()))

	p := page()
	tq := `task_queue="replyflow"`
	assert.Equal(t, 3.0, value(p, MetricSessions, tq, `state="idle"`))
	assert.Equal(t, 2.0, value(p, MetricSessions, tq, `state="waiting_user"`))
	assert.Equal(t, 1.0, value(p, MetricSessions, tq, `state="delivery_failed"`))
	assert.Equal(t, 0.0, value(p, MetricSessions, tq, `state="delivering"`), "a state with no session is 0, not absent")
	assert.Equal(t, 4.0, value(p, MetricProposalsPending, tq), "1 + 3 proposals")
	assert.Equal(t, 2.0, value(p, MetricTaskQueuePollers, tq, `type="workflow"`))
	assert.Equal(t, 0.0, value(p, MetricTaskQueuePollers, tq, `type="activity"`))
	assert.Equal(t, 1_800_000_000.0, value(p, MetricGaugesUpdated, tq))

	for _, q := range fake.queries {
		assert.Contains(t, q, `ExecutionStatus = "Running" AND TaskQueue = "replyflow"`, "open sessions of this task queue only")
	}
	assert.Len(t, fake.queries, len(countedStates)+4, "one query a state, and proposals counted up to the first empty level (>= 4)")
}

// A session with proposals past the bound costs no more queries: it is
// counted up to maxProposalsCounted.
func TestGaugesCountProposalsWithABoundedNumberOfQueries(t *testing.T) {
	fake := &fakeVisibility{pending: []int64{50, 2}}
	tel, page := newGaugePage(t)
	g := Gauges{Client: fake, TaskQueue: "replyflow", Metrics: tel.MetricsHandler(), Sessions: true, Logger: quiet}
	require.NoError(t, g.Read(context.Background()))
	assert.Equal(t, float64(maxProposalsCounted+2), value(page(), MetricProposalsPending))
	assert.Len(t, fake.queries, len(countedStates)+maxProposalsCounted)
}

// A read that fails leaves every gauge as it was, its timestamp too: the
// alerts see old numbers and, from the timestamp, that they are old,
// never a mix.
func TestAFailedReadChangesNoGauge(t *testing.T) {
	fake := &fakeVisibility{states: map[string]int64{"delivery_failed": 1}, pollers: map[enumspb.TaskQueueType]int{enumspb.TASK_QUEUE_TYPE_WORKFLOW: 1}}
	tel, page := newGaugePage(t)
	now := time.Unix(1_800_000_000, 0)
	g := Gauges{Client: fake, TaskQueue: "replyflow", Metrics: tel.MetricsHandler(), Sessions: true, Logger: quiet, Now: func() time.Time { return now }}
	require.NoError(t, g.Read(context.Background()))

	fake.states["delivery_failed"] = 0
	fake.fail = serviceerror.NewUnavailable("visibility store down")
	now = now.Add(time.Minute)
	err := g.Read(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "visibility store down")
	p := page()
	assert.Equal(t, 1.0, value(p, MetricSessions, `state="delivery_failed"`))
	assert.Equal(t, 1_800_000_000.0, value(p, MetricGaugesUpdated))
}

// A gateway reads the pollers of the task queue it starts sessions on,
// and counts no session.
func TestAGatewayReadsOnlyThePollers(t *testing.T) {
	fake := &fakeVisibility{}
	tel, page := newGaugePage(t)
	g := Gauges{Client: fake, TaskQueue: "prod", Metrics: tel.MetricsHandler(), Logger: quiet}
	require.NoError(t, g.Read(context.Background()))
	p := page()
	assert.Equal(t, 0.0, value(p, MetricTaskQueuePollers, `task_queue="prod"`, `type="workflow"`), "no worker polls prod")
	assert.Equal(t, -1.0, value(p, MetricSessions))
	assert.Equal(t, -1.0, value(p, MetricProposalsPending))
	assert.Empty(t, fake.queries)
}

// blockingVisibility answers nothing until its context ends.
type blockingVisibility struct{ fakeVisibility }

func (b *blockingVisibility) DescribeTaskQueue(ctx context.Context, _ string, _ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A read that hangs gives up at gaugeTimeout and says so.
func TestAHangingReadEndsAtItsTimeout(t *testing.T) {
	tel, _ := newGaugePage(t)
	g := Gauges{Client: &blockingVisibility{}, TaskQueue: "replyflow", Metrics: tel.MetricsHandler(), Logger: quiet}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err := g.Read(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer within "+gaugeTimeout.String())
}

// Run reads at once, and returns when its context ends.
func TestGaugesRunReadsAtOnceAndStops(t *testing.T) {
	fake := &fakeVisibility{fail: errors.New("down")}
	tel, _ := newGaugePage(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Gauges{Client: fake, TaskQueue: "replyflow", Metrics: tel.MetricsHandler(), Logger: quiet}.Run(ctx)
	}()
	require.Eventually(t, func() bool {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return fake.describe > 0
	}, 10*time.Second, 10*time.Millisecond, "the first read is at once, not GaugeInterval later")
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run goes on after its context ended")
	}
}
