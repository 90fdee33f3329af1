package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// benchIdle opens sessions that stay idle (a group message addressed to
// someone else: the session observes it and waits) and reads the worker
// process's resident memory once it has taken them all in.
func benchIdle(ctx context.Context, c client.Client, o options) ([][]string, error) {
	botID := time.Now().UnixNano() % 1_000_000_000
	fake := telegramtest.New(strconv.FormatInt(botID, 10) + ":bench")
	defer fake.Close()
	queue := fmt.Sprintf("bench-idle-%d", botID)
	env := harness.Env(o.address, queue, filepath.Join(o.workDir, "idle.db"), fake, map[string]string{"CODEC_KEYS": o.codecKeys, "WORKER_VERSIONING": strconv.FormatBool(!o.unversioned)})
	worker := harness.Worker(o.replyflow, env, filepath.Join(o.workDir, "worker-idle.log"))
	if err := worker.Start(); err != nil {
		return nil, err
	}
	defer worker.Stop()
	time.Sleep(2 * time.Second) // let the worker connect before the baseline
	base, err := worker.RSS()
	if err != nil {
		return nil, err
	}
	rows := [][]string{{"worker memory, no session", mb(base), ""}}

	ingress := &gateway.Ingress{Client: c, TaskQueue: queue}
	key := func(i int) pipeline.SessionKey {
		return pipeline.SessionKey{Channel: telegram.Channel, Account: strconv.FormatInt(botID, 10), Chat: strconv.Itoa(-3_000_000 - i)}
	}
	open := func(ctx context.Context, i int) error {
		k := key(i)
		return ingress.Accept(ctx, pipeline.Inbound{
			Channel: k.Channel, Account: k.Account, ChatID: k.Chat, ChatType: pipeline.ChatGroup,
			MessageID: "1", SenderID: "7", SenderName: "Bench", Text: "@someone_else hello",
			MentionsOthers: true, ReceivedAt: time.Now().UTC(),
		})
	}
	targets := append([]int(nil), o.idle...)
	sort.Ints(targets)
	opened := 0
	for _, target := range targets {
		_, err := timed(ctx, func(ctx context.Context, i int) error { return open(ctx, opened+i) }, target-opened, o.concurrency)
		if err != nil {
			return nil, err
		}
		opened = target
		if err := waitDrained(ctx, c, queue); err != nil {
			return nil, err
		}
		rss, err := worker.RSS()
		if err != nil {
			return nil, fmt.Errorf("%w\nworker log:\n%s", err, worker.Tail())
		}
		goal := ""
		if target == 10_000 {
			goal = "≤ 300 MB"
		}
		rows = append(rows, []string{fmt.Sprintf("worker memory, %d idle sessions", target), mb(rss), goal})
	}
	terminate(ctx, c, o.concurrency, opened, func(i int) string { return key(i).WorkflowID() })
	return rows, nil
}

// waitDrained waits until the task queue's workflow tasks are all taken,
// twice in a row a second apart.
func waitDrained(ctx context.Context, c client.Client, queue string) error {
	deadline := time.Now().Add(15 * time.Minute)
	empty := 0
	for empty < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the worker did not take in the sessions of %s in 15 minutes", queue)
		}
		time.Sleep(time.Second)
		resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: "default", TaskQueue: &taskqueuepb.TaskQueue{Name: queue},
			TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW, ReportStats: true,
		})
		if err != nil {
			return fmt.Errorf("describe task queue %s: %w", queue, err)
		}
		if resp.GetStats().GetApproximateBacklogCount() == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	return nil
}

func mb(bytes int64) string { return fmt.Sprintf("%.0f MB", float64(bytes)/(1<<20)) }
