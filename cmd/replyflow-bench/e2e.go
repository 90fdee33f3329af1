package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/pipeline"
)

// timingSink is the gateway's ingress, noting when each message was
// accepted by Temporal: the start of the end-to-end latency.
type timingSink struct {
	*gateway.Ingress
	mu       sync.Mutex
	accepted map[string]time.Time // chat/message
}

func (s *timingSink) Accept(ctx context.Context, in pipeline.Inbound) error {
	if err := s.Ingress.Accept(ctx, in); err != nil {
		return err
	}
	s.mu.Lock()
	s.accepted[in.ChatID+"/"+in.MessageID] = time.Now()
	s.mu.Unlock()
	return nil
}

func (s *timingSink) acceptedAt(chat int64, msg int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.accepted[strconv.FormatInt(chat, 10)+"/"+strconv.Itoa(msg)]
	return at, ok
}

// e2e is the end-to-end rig: the fake Bot API, the real worker process
// with the demo model (no delay) and debounce off, and the gateway's
// Telegram receiver and ingress in this process, timing acceptance.
type e2e struct {
	c       client.Client
	fake    *telegramtest.Server
	sink    *timingSink
	workers []*harness.Proc
	bot     telegram.Identity
	next    int64 // next chat ID
	// clearDelay is the workers' REACTION_CLEAR_DELAY: how long after a
	// reply its reaction is cleared.
	clearDelay time.Duration
}

func benchEndToEnd(ctx context.Context, c client.Client, o options) ([][]string, error) {
	r, stop, err := startE2E(ctx, c, o, "e2e", nil)
	if err != nil {
		return nil, err
	}
	defer stop()
	rows, err := r.historyPerTurn(ctx)
	if err != nil {
		return nil, r.withLog(err)
	}
	for _, level := range o.sessions {
		row, err := r.latency(ctx, level, o.messages, o.think)
		if err != nil {
			return nil, r.withLog(err)
		}
		rows = append(rows, row)
	}
	if len(o.sessions) == 0 {
		return rows, nil
	}
	// The same sessions with no pause between a reply and the next
	// message: the most turns a second this machine runs.
	most := slices.Max(o.sessions)
	row, err := r.latency(ctx, most, o.messages, 0)
	if err != nil {
		return nil, r.withLog(err)
	}
	rows = append(rows, row)

	// A worker that keeps one session in memory: nearly every task
	// replays its session's history, the cost a session evicted from a
	// full cache pays on its next message.
	cold, stopCold, err := startE2E(ctx, c, o, "e2e-cache1", map[string]string{"WORKFLOW_CACHE_SIZE": "1"})
	if err != nil {
		return nil, err
	}
	defer stopCold()
	if _, err := cold.ask(ctx, telegramtest.Private(1), "warm up"); err != nil {
		return nil, cold.withLog(err)
	}
	sessions := min(10, most)
	row, err = cold.latency(ctx, sessions, o.messages, o.think)
	if err != nil {
		return nil, cold.withLog(err)
	}
	row[0] = fmt.Sprintf("  … same, %d sessions, cache of 1 (replays)", sessions)
	return append(rows, row), nil
}

// startE2E starts a rig: a fake Bot API, the real worker process (the
// demo model with no delay, debounce off, extra on top) on a task queue
// of its own, and the gateway's Telegram receiver in this process.
func startE2E(ctx context.Context, c client.Client, o options, name string, extra map[string]string) (*e2e, func(), error) {
	return startE2EWith(ctx, c, o, name, extra, 1, filepath.Join(o.workDir, name+".db"))
}

// startE2EWith is startE2E with workers worker processes on the rig's
// task queue, sharing the store at storeDSN.
func startE2EWith(ctx context.Context, c client.Client, o options, name string, extra map[string]string, workers int, storeDSN string) (*e2e, func(), error) {
	botID := time.Now().UnixNano() % 1_000_000_000
	fake := telegramtest.New(strconv.FormatInt(botID, 10) + ":bench")
	queue := fmt.Sprintf("bench-%s-%d", name, botID)
	vars := map[string]string{"DEBOUNCE": "0", "REACTION_CLEAR_DELAY": "1s", "CODEC_KEYS": o.codecKeys, "WORKER_VERSIONING": strconv.FormatBool(!o.unversioned)}
	for k, v := range extra {
		vars[k] = v
	}
	clearDelay, err := time.ParseDuration(vars["REACTION_CLEAR_DELAY"])
	if err != nil {
		return nil, nil, fmt.Errorf("REACTION_CLEAR_DELAY: %w", err)
	}
	env := append(harness.Env(o.address, queue, storeDSN, fake, vars), o.rawEnv...)
	deployment := vars["DEPLOYMENT_NAME"]
	if deployment == "" {
		deployment = "replyflow"
	}
	var procs []*harness.Proc
	stopWorkers := func() {
		for _, w := range procs {
			w.Stop()
		}
	}
	for i := range workers {
		w := harness.Worker(o.replyflow, env, filepath.Join(o.workDir, fmt.Sprintf("worker-%s-%d.log", name, i+1)))
		if err := w.Start(); err != nil {
			stopWorkers()
			fake.Close()
			return nil, nil, err
		}
		procs = append(procs, w)
	}
	// The first worker on a new server makes its version current; until
	// then a new session would wait for unversioned workers.
	if !o.unversioned {
		if err := harness.AwaitCurrentVersion(ctx, c, deployment, ""); err != nil {
			stopWorkers()
			fake.Close()
			return nil, nil, err
		}
	}

	ingress := &gateway.Ingress{Client: c, TaskQueue: queue}
	sink := &timingSink{Ingress: ingress, accepted: map[string]time.Time{}}
	rcv, err := telegram.NewReceiver(ctx, telegram.ReceiverConfig{
		Token: fake.Token, APIURL: fake.URL(), Sink: sink, Feedback: sink.Ingress,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		stopWorkers()
		fake.Close()
		return nil, nil, err
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	go func() { _ = rcv.Poll(pollCtx) }()
	stop := func() {
		stopPolling()
		stopWorkers()
		fake.Close()
	}
	return &e2e{c: c, fake: fake, sink: sink, workers: procs, bot: rcv.Identity(), next: 2_000_000, clearDelay: clearDelay}, stop, nil
}

func (r *e2e) withLog(err error) error {
	return fmt.Errorf("%w\nworker log:\n%s", err, r.workers[0].Tail())
}

// ask sends one message in chat and waits for the bot's reply to it.
func (r *e2e) ask(ctx context.Context, chat telegramtest.Chat, text string) (int, error) {
	msg := r.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: telegramtest.User{ID: chat.ID, FirstName: "Bench"}, Text: text})
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// In constant time: every waiter looks at every change of the fake.
	err := r.fake.WaitFor(waitCtx, func() bool { return r.fake.Replies(chat.ID, msg) > 0 })
	if err != nil {
		return 0, fmt.Errorf("no reply in chat %d to message %d: %w", chat.ID, msg, err)
	}
	return msg, nil
}

// historyPerTurn counts the history events of a session's first simple
// turn (from the workflow's start until its reaction is cleared) and of
// a second one.
func (r *e2e) historyPerTurn(ctx context.Context) ([][]string, error) {
	r.next++
	chat := telegramtest.Private(r.next)
	id := pipeline.SessionKey{Channel: telegram.Channel, Account: r.bot.Account(), Chat: strconv.FormatInt(chat.ID, 10)}.WorkflowID()
	var counts []int
	for turn := 1; turn <= 2; turn++ {
		msg, err := r.ask(ctx, chat, "hello "+strconv.Itoa(turn))
		if err != nil {
			return nil, err
		}
		if err := r.awaitCleared(ctx, chat, msg); err != nil {
			return nil, err
		}
		n, err := settledHistoryLength(ctx, r.c, id)
		if err != nil {
			return nil, err
		}
		counts = append(counts, n)
	}
	calls := map[string]int{}
	for _, call := range r.fake.Calls() {
		if call.Params["chat_id"] == strconv.FormatInt(chat.ID, 10) {
			calls[call.Method]++
		}
	}
	return [][]string{
		{"history events, first turn (incl. start)", strconv.Itoa(counts[0]), "≤ 30"},
		{"history events, each further turn", strconv.Itoa(counts[1] - counts[0]), ""},
		{"platform calls per turn", fmt.Sprintf("%.1f sends, %.1f reactions, %.1f typing",
			float64(calls["sendMessage"])/2, float64(calls["setMessageReaction"])/2, float64(calls["sendChatAction"])/2), ""},
	}, nil
}

// settledHistoryLength is the number of events in the workflow's current
// run once no new event has appeared for half a second.
func settledHistoryLength(ctx context.Context, c client.Client, id string) (int, error) {
	events, err := settledHistory(ctx, c, id)
	return len(events), err
}

// awaitCleared waits, up to a minute beyond the clear delay, until msg's
// reaction is cleared: the end of its turn.
func (r *e2e) awaitCleared(ctx context.Context, chat telegramtest.Chat, msg int) error {
	waitCtx, cancel := context.WithTimeout(ctx, r.clearDelay+time.Minute)
	defer cancel()
	err := r.fake.WaitFor(waitCtx, func() bool {
		h := r.fake.Reactions(chat.ID, msg)
		return len(h) > 0 && len(h[len(h)-1].Emoji) == 0
	})
	if err != nil {
		return fmt.Errorf("the reaction was never cleared: %w", err)
	}
	return nil
}

// latency runs sessions conversations at once, each of messages turns in
// a row with a pause of about think (uniform from half to one and a half)
// between a reply and the next message, as people pause to read and
// type, and reports the time from accepted inbound to first delivered
// chunk. With think 0 it is a saturation run: the rate it reaches is the
// machine's capacity, and its latency is mostly queueing.
func (r *e2e) latency(ctx context.Context, sessions, messages int, think time.Duration) ([]string, error) {
	row, _, err := r.latencyRate(ctx, sessions, messages, think)
	return row, err
}

// latencyRate is latency, with the turns a second it reached.
func (r *e2e) latencyRate(ctx context.Context, sessions, messages int, think time.Duration) ([]string, float64, error) {
	chats := make([]telegramtest.Chat, sessions)
	for i := range chats {
		r.next++
		chats[i] = telegramtest.Private(r.next)
	}
	type asked struct {
		chat int64
		msg  int
	}
	var mu sync.Mutex
	var all []asked
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	start := time.Now()
	for i, chat := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(i)))
			// Sessions start spread over one pause, as people do.
			pause := func() time.Duration { return think/2 + time.Duration(rnd.Int63n(int64(think)+1)) }
			if think > 0 {
				time.Sleep(time.Duration(rnd.Int63n(int64(think) + 1)))
			}
			for k := range messages {
				msg, err := r.ask(ctx, chat, "message "+strconv.Itoa(k))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				all = append(all, asked{chat.ID, msg})
				mu.Unlock()
				if think > 0 && k < messages-1 {
					time.Sleep(pause())
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, 0, err
	}
	firstSend := map[string]time.Time{}
	for _, call := range r.fake.Calls("sendMessage") {
		if call.Status != 200 {
			continue
		}
		key := call.Params["chat_id"] + "/" + replyTo(call.Params["reply_parameters"])
		if _, seen := firstSend[key]; !seen {
			firstSend[key] = call.At
		}
	}
	var latencies []time.Duration
	for _, a := range all {
		accepted, ok := r.sink.acceptedAt(a.chat, a.msg)
		sent, delivered := firstSend[strconv.FormatInt(a.chat, 10)+"/"+strconv.Itoa(a.msg)]
		if ok && delivered {
			latencies = append(latencies, sent.Sub(accepted))
		}
	}
	if len(latencies) == 0 {
		return nil, 0, fmt.Errorf("no latency could be measured")
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	name := fmt.Sprintf("accepted → first chunk, %d sessions, %s pause", sessions, think)
	target := ""
	if think == 0 {
		name = fmt.Sprintf("saturation: %d sessions, no pause", sessions)
	} else if sessions >= 50 {
		target = "p50 ≤ 60 ms, p99 ≤ 250 ms"
	}
	rate := float64(len(latencies)) / elapsed.Seconds()
	return []string{
		name,
		fmt.Sprintf("p50 %s  p95 %s  p99 %s  (%d turns, %.1f/s)", ms(pct(latencies, 50)), ms(pct(latencies, 95)), ms(pct(latencies, 99)),
			len(latencies), rate),
		target,
	}, rate, nil
}

// replyTo is the message a sendMessage call answered, from its
// reply_parameters.
func replyTo(params string) string {
	var p struct {
		MessageID int `json:"message_id"`
	}
	if json.Unmarshal([]byte(params), &p) != nil {
		return ""
	}
	return strconv.Itoa(p.MessageID)
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
