package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// The crash-recovery measure: crashChats chats each send one message at
// once to a model that takes crashModelLatency, with a debounce window
// of crashDebounce; then the worker and the gateway are killed
// (SIGKILL) at each of crashKills after the messages and started again
// at once. A kill at 1 s falls in the model's call or just before it;
// one at 3 s falls in it.
const (
	crashChats        = 10
	crashModelLatency = 3 * time.Second
	crashDebounce     = 300 * time.Millisecond
)

var crashKills = []time.Duration{time.Second, 3 * time.Second}

// crashRig is the real gateway and worker processes, a fake Bot API and
// a fake OpenAI whose every answer takes crashModelLatency.
type crashRig struct {
	fake    *telegramtest.Server
	model   *modeltest.Server
	gateway *harness.Proc
	worker  *harness.Proc
	next    int64 // next chat ID
}

func benchCrash(ctx context.Context, c client.Client, o options) ([][]string, error) {
	r, stop, err := startCrashRig(ctx, c, o)
	if err != nil {
		return nil, err
	}
	defer stop()
	if _, err := r.round(ctx, 0); err != nil { // warm up: the processes, the version
		return nil, r.withLog(err)
	}
	var rows [][]string
	var calm, all []string // the sessions of the round with no crash, of every round
	for _, kill := range append([]time.Duration{0}, crashKills...) {
		res, err := r.round(ctx, kill)
		if err != nil {
			return nil, r.withLog(err)
		}
		all = append(all, res.sessions...)
		name := fmt.Sprintf("%d chats, model %s, no crash", crashChats, crashModelLatency)
		target := ""
		if kill > 0 {
			name = fmt.Sprintf("  … worker and gateway killed at %s, restarted at once", kill)
			target = map[time.Duration]string{time.Second: "last ≤ 6 s", 3 * time.Second: "last ≤ 10 s"}[kill]
		}
		rows = append(rows, []string{name, fmt.Sprintf("message → answer: first %s, p50 %s, last %s; model asked %d times",
			secs(res.answers[0]), secs(pct(res.answers, 50)), secs(res.answers[len(res.answers)-1]), res.asked), target})
		if kill == 0 {
			calm = res.sessions
			rows = append(rows, []string{fmt.Sprintf("  … message → model step starts, less the debounce (%s)", crashDebounce),
				fmt.Sprintf("p50 %s, max %s", ms(pct(res.late, 50)), ms(pct(res.late, 100))), ""})
			continue
		}
		rows = append(rows, []string{"    restart → answer",
			fmt.Sprintf("first %s, p50 %s, max %s", secs(res.sinceRestart[0]), secs(pct(res.sinceRestart, 50)), secs(pct(res.sinceRestart, 100))), ""})
	}
	// The debounce windows of every round have fired (each answer came
	// after its window), crashes or not: the server fires timers with no
	// worker. They are the timers no longer than the debounce (a
	// reaction's clear waits longer).
	windows, err := timerLateness(ctx, c, all, func(t harness.FiredTimer) bool { return t.Timeout <= crashDebounce })
	if err != nil {
		return nil, err
	}
	if len(windows) == 0 {
		return nil, fmt.Errorf("no debounce window fired in the sessions %v", all)
	}
	rows = append(rows, []string{"debounce windows fired after their due time (history: fired − started − timeout)",
		fmt.Sprintf("p50 %s, max %s (%d windows)", ms(pct(windows, 50)), ms(pct(windows, 100)), len(windows)), "≤ 100 ms"})
	// By now every timer of the calm round's sessions but their idle
	// TTL's has fired: debounce windows, reaction clears.
	late, err := timerLateness(ctx, c, calm, func(harness.FiredTimer) bool { return true })
	if err != nil {
		return nil, err
	}
	if len(late) == 0 {
		return nil, fmt.Errorf("no timer fired in the sessions %v", calm)
	}
	rows = append(rows, []string{"every timer of the round with no crash, after its due time",
		fmt.Sprintf("p50 %s, max %s (%d timers)", ms(pct(late, 50)), ms(pct(late, 100)), len(late)), "≤ 100 ms"})
	return rows, nil
}

// timerLateness is how late the fired timers of the sessions' histories
// that keep holds fired (harness.TimersFired), sorted.
func timerLateness(ctx context.Context, c client.Client, sessions []string, keep func(harness.FiredTimer) bool) ([]time.Duration, error) {
	var late []time.Duration
	for _, id := range sessions {
		events, err := settledHistory(ctx, c, id)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		for _, t := range harness.TimersFired(events) {
			if keep(t) {
				late = append(late, t.Late)
			}
		}
	}
	slices.Sort(late)
	return late, nil
}

func startCrashRig(ctx context.Context, c client.Client, o options) (*crashRig, func(), error) {
	botID := time.Now().UnixNano() % 1_000_000_000
	fake := telegramtest.New(strconv.FormatInt(botID, 10) + ":crash")
	model := modeltest.NewOpenAI()
	deployment := fmt.Sprintf("bench-crash-%d", botID)
	vars := map[string]string{
		"MODEL": "openai/bench-crash", "STREAM": "off", "DEBOUNCE": crashDebounce.String(),
		"REACTION_CLEAR_DELAY": "1s", "CODEC_KEYS": o.codecKeys, "DEPLOYMENT_NAME": deployment,
		"WORKER_VERSIONING": strconv.FormatBool(!o.unversioned),
	}
	env := harness.Env(o.address, "bench-crash-"+strconv.FormatInt(botID, 10), filepath.Join(o.workDir, "crash.db"), fake, vars)
	env = append(env, "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=bench")
	r := &crashRig{fake: fake, model: model, next: 3_000_000}
	r.worker = harness.Worker(o.replyflow, env, filepath.Join(o.workDir, "worker-crash.log"))
	gw, err := harness.Gateway(o.replyflow, env, filepath.Join(o.workDir, "gateway-crash.log"))
	stop := func() {
		if r.gateway != nil {
			r.gateway.Stop()
		}
		r.worker.Stop()
		model.Close()
		fake.Close()
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	r.gateway = gw
	if err := r.start(); err != nil {
		stop()
		return nil, nil, err
	}
	if !o.unversioned {
		if err := harness.AwaitCurrentVersion(ctx, c, deployment, ""); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return r, stop, nil
}

func (r *crashRig) start() error {
	if err := r.worker.Start(); err != nil {
		return err
	}
	return r.gateway.Start()
}

func (r *crashRig) withLog(err error) error {
	return fmt.Errorf("%w\nworker log:\n%s\ngateway log:\n%s", err, r.worker.Tail(), r.gateway.Tail())
}

type crashRound struct {
	answers []time.Duration // message → its answer, per chat, sorted
	late    []time.Duration // debounce due → the model step's typing, sorted
	// sinceRestart is the processes' restart → each answer, sorted
	// (empty without a kill).
	sinceRestart []time.Duration
	asked        int // model requests in the round
	// sessions are the round's workflow IDs.
	sessions []string
}

// round sends one message in each of crashChats new chats, kills and
// restarts both processes kill after the first message (not at all when
// kill is 0), and waits for every answer. The first typing indicator of
// a chat marks its model step's start (AgentTurn shows it at once).
func (r *crashRig) round(ctx context.Context, kill time.Duration) (crashRound, error) {
	r.model.Push(slices.Repeat([]modeltest.Step{{Latency: crashModelLatency}}, 3*crashChats)...)
	asked := len(r.model.Requests())
	type sent struct {
		chat telegramtest.Chat
		msg  int
		at   time.Time
	}
	var msgs []sent
	var restarted time.Time
	for range crashChats {
		r.next++
		chat := telegramtest.Private(r.next)
		at := time.Now()
		msgs = append(msgs, sent{chat, r.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: telegramtest.User{ID: chat.ID, FirstName: "Bench"}, Text: "are you there?"}), at})
	}
	if kill > 0 {
		// The scenario's schedule, not a wait for a condition: the
		// crash falls at a fixed time after the messages.
		time.Sleep(time.Until(msgs[0].at.Add(kill)))
		r.worker.Kill()
		r.gateway.Kill()
		restarted = time.Now()
		if err := r.start(); err != nil {
			return crashRound{}, err
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var res crashRound
	for _, m := range msgs {
		if err := r.fake.WaitFor(waitCtx, func() bool { return r.fake.Replies(m.chat.ID, m.msg) > 0 }); err != nil {
			return crashRound{}, fmt.Errorf("no answer in chat %d (kill at %s): %w", m.chat.ID, kill, err)
		}
		id := strconv.FormatInt(m.chat.ID, 10)
		answered, typing := time.Time{}, time.Time{}
		for _, call := range r.fake.Calls("sendMessage", "sendChatAction") {
			if call.Params["chat_id"] != id || call.Status != 200 {
				continue
			}
			if call.Method == "sendMessage" && answered.IsZero() {
				answered = call.At
			}
			if call.Method == "sendChatAction" && typing.IsZero() {
				typing = call.At
			}
		}
		res.answers = append(res.answers, answered.Sub(m.at))
		if !restarted.IsZero() {
			res.sinceRestart = append(res.sinceRestart, answered.Sub(restarted))
		}
		res.sessions = append(res.sessions, pipeline.SessionKey{Channel: telegram.Channel, Account: strconv.FormatInt(r.fake.Bot.ID, 10), Chat: id}.WorkflowID())
		if !typing.IsZero() {
			res.late = append(res.late, typing.Sub(m.at)-crashDebounce)
		}
	}
	slices.Sort(res.answers)
	slices.Sort(res.sinceRestart)
	slices.Sort(res.late)
	res.asked = len(r.model.Requests()) - asked
	return res, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
