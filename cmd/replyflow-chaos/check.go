package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/workflows"
)

// clearMargin is how long past the clear delay, counted from the last
// answer, a reaction may still show: the coalescing window and a slow
// machine. A platform whose delivery budget may still be draining the
// run's backlog then says how long it needs (clearMargin()). The report
// says how long the clears took.
const clearMargin = 15 * time.Second

// marginOf is p's clear margin.
func marginOf(p platform) time.Duration {
	if m, ok := p.(interface{ clearMargin() time.Duration }); ok {
		return m.clearMargin()
	}
	return clearMargin
}

// check waits for the answers and the clears on every platform, then
// counts what is missing, left behind, duplicated or stuck.
func (r *rig) check(ctx context.Context, messages [][]sent, kills []kill) (report, error) {
	rep := report{kills: map[string]int{}, aimed: map[string]int{}}
	for _, k := range kills {
		rep.kills[k.victim]++
		if k.aimedAt != "" {
			rep.aimed[k.aimedAt]++
		}
	}
	for i, p := range r.platforms {
		rep.platforms = append(rep.platforms, platformReport{name: p.name(), sent: len(messages[i]), explainedBy: map[string]int{}})
	}

	// One deadline for every platform's answers.
	waitCtx, cancel := context.WithTimeout(ctx, r.cfg.settle)
	go r.keepRunning(waitCtx)
	for i, p := range r.platforms {
		pending := slices.Clone(messages[i])
		_ = p.waitFor(waitCtx, func() bool {
			// An answer stays, so a message answered is not looked at
			// again, which keeps each look cheap on a long run.
			pending = slices.DeleteFunc(pending, p.answered)
			return len(pending) == 0
		})
		fmt.Fprintf(r.cfg.progress, "chaos: %s: %d messages unanswered at %s\n", p.name(), len(pending), time.Now().Format(timeFormat))
	}
	rep.answeredAt = time.Now()
	cancel()
	for i, p := range r.platforms {
		pr := &rep.platforms[i]
		for _, m := range messages[i] {
			if !p.answered(m) {
				pr.unanswered++
				problem := fmt.Sprintf("message %s in chat %s (%s) was never answered", m.msg, m.chat, m.token)
				if d, ok := p.(interface{ why(sent) string }); ok {
					problem += ": " + d.why(m)
				}
				pr.problems = append(pr.problems, problem)
			}
		}
	}

	// Every reaction must be cleared within the clear delay (and the
	// platform's margin) of the last answer.
	for i, p := range r.platforms {
		clearCtx, cancel := context.WithDeadline(ctx, rep.answeredAt.Add(r.cfg.clearDelay+marginOf(p)))
		// Every message every time: a reaction may be gone for a moment
		// between two states (Slack removes one before adding the next).
		if p.waitFor(clearCtx, func() bool {
			return !slices.ContainsFunc(messages[i], func(m sent) bool { return p.showing(m) != "" })
		}) == nil {
			rep.platforms[i].cleared = time.Since(rep.answeredAt)
		}
		cancel()
	}
	for i, p := range r.platforms {
		pr := &rep.platforms[i]
		for _, m := range messages[i] {
			if emoji := p.showing(m); emoji != "" {
				pr.uncleared++
				pr.problems = append(pr.problems, fmt.Sprintf("message %s in chat %s still shows %s", m.msg, m.chat, emoji))
			}
		}
	}
	rep.exits = r.exits()
	workerLog := r.workerLogs()
	for i, p := range r.platforms {
		pr := &rep.platforms[i]
		p.tally(kills, workerLog, pr)
		if err := r.checkIdle(ctx, p, messages[i], pr); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// keepRunning restarts, until ctx ends, any process that died on its own.
func (r *rig) keepRunning(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
			if err := r.ensureRunning(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(r.cfg.progress, "chaos: %v\n", err)
			}
		}
	}
}

// checkIdle queries the session of each chat the platform talked in: it
// must be idle, and its turn count adds to the turns run.
func (r *rig) checkIdle(ctx context.Context, p platform, messages []sent, pr *platformReport) error {
	c, err := harness.Dial(ctx, r.address, r.cfg.codecKeys)
	if err != nil {
		return err
	}
	defer c.Close()
	chats := map[string]bool{}
	for _, m := range messages {
		chats[m.chat] = true
	}
	for _, chat := range slices.Sorted(maps.Keys(chats)) {
		id := p.session(chat).WorkflowID()
		snap, err := queryState(ctx, c, id)
		if err != nil {
			pr.notIdle++
			pr.problems = append(pr.problems, fmt.Sprintf("session %s could not be queried: %v", id, err))
			continue
		}
		pr.turns += snap.TurnSeq
		if snap.Status != workflows.StatusIdle {
			pr.notIdle++
			pr.problems = append(pr.problems, fmt.Sprintf("session %s is %s", id, snap.Status))
		}
	}
	return nil
}

// queryState asks a session for its state, again until a 30 s deadline:
// for a few seconds after a worker's SIGKILL, a query of a session that
// worker ran last can fail ("no poller seen for task queue recently")
// until Temporal gives up on that worker's sticky queue.
func queryState(ctx context.Context, c client.Client, id string) (workflows.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var snap workflows.Snapshot
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState)
		if err == nil {
			err = v.Get(&snap)
		}
		if err == nil {
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return snap, err
		case <-time.After(time.Second):
		}
	}
}
