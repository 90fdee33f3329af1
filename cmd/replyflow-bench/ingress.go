package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot/models"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// ingressRounds is how many raw-ingress-ingress-raw rounds a run takes.
const ingressRounds = 4

// benchIngress compares the server's raw SignalWithStart rate (a no-op
// workflow type, nothing else) with replyflow's ingress: Telegram update
// normalization, validation, and SignalWithStart of the session workflow
// (gateway.Ingress). No worker polls either task queue, so both measure
// what the gateway waits for. The runs alternate in rounds of raw,
// ingress, ingress, raw, so that drift in the server's speed (its
// histories grow with every signal) cancels out.
func benchIngress(ctx context.Context, c client.Client, o options) ([][]string, error) {
	runID := time.Now().UnixNano()
	bot := telegram.Identity{ID: runID % 1_000_000_000, Username: "bench_bot"}
	rawQueue, ingressQueue := fmt.Sprintf("bench-raw-%d", runID), fmt.Sprintf("bench-ingress-%d", runID)
	ingress := &gateway.Ingress{Client: c, TaskQueue: ingressQueue}
	update := func(i int) *models.Update {
		chat := int64(1_000_000 + i%o.ingressIDs)
		return &models.Update{ID: int64(i + 1), Message: &models.Message{
			ID: i + 1, Date: int(time.Now().Unix()), Text: "benchmark message " + strconv.Itoa(i),
			From: &models.User{ID: chat, FirstName: "Bench"}, Chat: models.Chat{ID: chat, Type: models.ChatTypePrivate},
		}}
	}
	raw := func(ctx context.Context, i int) error {
		ev := telegram.Normalize(bot, update(i), time.Now())
		id := fmt.Sprintf("bench-raw-%d-%d", runID, i%o.ingressIDs)
		_, err := c.SignalWithStartWorkflow(ctx, id, "inbound", ev.Inbound, client.StartWorkflowOptions{ID: id, TaskQueue: rawQueue}, "BenchNoop")
		return err
	}
	real := func(ctx context.Context, i int) error {
		ev := telegram.Normalize(bot, update(i), time.Now())
		if err := ev.Inbound.Validate(); err != nil {
			return err
		}
		return ingress.Accept(ctx, *ev.Inbound)
	}
	// Warm both paths up (connections, workflow creation) before timing.
	if _, err := timed(ctx, raw, o.ingressIDs, o.concurrency); err != nil {
		return nil, err
	}
	if _, err := timed(ctx, real, o.ingressIDs, o.concurrency); err != nil {
		return nil, err
	}
	var rawTime, realTime time.Duration
	for range ingressRounds {
		for _, isRaw := range []bool{true, false, false, true} {
			f, total := real, &realTime
			if isRaw {
				f, total = raw, &rawTime
			}
			d, err := timed(ctx, f, o.signals/(2*ingressRounds), o.concurrency)
			if err != nil {
				return nil, err
			}
			*total += d
		}
	}
	terminate(ctx, c, o.concurrency, o.ingressIDs, func(i int) string { return fmt.Sprintf("bench-raw-%d-%d", runID, i) })
	terminate(ctx, c, o.concurrency, o.ingressIDs, func(i int) string {
		return pipeline.SessionKey{Channel: telegram.Channel, Account: bot.Account(), Chat: strconv.Itoa(1_000_000 + i)}.WorkflowID()
	})
	rawRate := float64(o.signals) / rawTime.Seconds()
	realRate := float64(o.signals) / realTime.Seconds()
	note := fmt.Sprintf("%d signals, %d callers, %d sessions", o.signals, o.concurrency, o.ingressIDs)
	return [][]string{
		{"raw SignalWithStart (no-op workflow)", fmt.Sprintf("%.0f/s", rawRate), note},
		{"ingress (normalize + SignalWithStart session)", fmt.Sprintf("%.0f/s", realRate), ""},
		{"ingress / raw", fmt.Sprintf("%.2f", realRate/rawRate), "≥ 0.90"},
	}, nil
}

// timed runs f for 0..n-1 on workers goroutines and returns the time taken.
func timed(ctx context.Context, f func(context.Context, int) error, n, workers int) (time.Duration, error) {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// terminate ends the benchmark's workflows, so none lingers on a shared
// server.
func terminate(ctx context.Context, c client.Client, workers, n int, id func(int) string) {
	_, _ = timed(ctx, func(ctx context.Context, i int) error {
		_ = c.TerminateWorkflow(ctx, id(i), "", "replyflow-bench is done with it")
		return nil
	}, n, workers)
}
