package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
)

type config struct {
	temporalCLI, replyflow string
	sessions, messages     int
	gap, killEvery         time.Duration
	killServer             bool
	clearDelay             time.Duration
	settle                 time.Duration // most time to wait for the last answers
	seed                   int64
	workDir                string
	progress               io.Writer
}

func defaultConfig() config {
	return config{clearDelay: 2 * time.Second, settle: 4 * time.Minute, progress: io.Discard}
}

// botAccount is the fake bot's ID, the account part of its sessions' keys.
const botAccount = "4242"

// sent is one user message: its chat, ID and the token its text carries.
type sent struct {
	chat  int64
	msg   int
	token string
}

// kill is one kill: whom, when, and when the victim was back.
type kill struct {
	victim string
	at, up time.Time
}

// rig is the system under attack.
type rig struct {
	cfg      config
	fake     *telegramtest.Server
	temporal *harness.Temporal
	worker   *harness.Proc
	gateway  *harness.Proc
	// killRnd chooses kills and talkRnd the pauses between messages; two
	// sources, as they are used from two goroutines.
	killRnd, talkRnd *rand.Rand

	mu        sync.Mutex
	deadProcs int // worker or gateway found dead without a kill
}

func (r *rig) exits() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deadProcs
}

func run(ctx context.Context, cfg config) (report, error) {
	r := &rig{cfg: cfg, killRnd: rand.New(rand.NewSource(cfg.seed)), talkRnd: rand.New(rand.NewSource(cfg.seed + 1))}
	fmt.Fprintf(cfg.progress, "chaos: seed %d, %d sessions × %d messages, work dir %s\n", cfg.seed, cfg.sessions, cfg.messages, cfg.workDir)
	r.fake = telegramtest.New(botAccount + ":chaos")
	defer r.fake.Close()
	var err error
	r.temporal, err = harness.StartTemporal(ctx, cfg.temporalCLI, filepath.Join(cfg.workDir, "temporal.db"), filepath.Join(cfg.workDir, "temporal.log"))
	if err != nil {
		return report{}, err
	}
	defer r.temporal.Stop()
	env := harness.Env(r.temporal.Address, "chaos", filepath.Join(cfg.workDir, "replyflow.db"), r.fake, map[string]string{
		"DEBOUNCE":               "300ms",
		"DEMO_MODEL_DELAY":       "300ms",
		"REACTION_CLEAR_DELAY":   cfg.clearDelay.String(),
		"ERROR_CLEAR_DELAY":      cfg.clearDelay.String(),
		"TURN_HEARTBEAT_TIMEOUT": "5s",
		"DELIVERY_TIMEOUT":       "5s",
		"LOG_LEVEL":              "info",
	})
	r.worker = harness.Worker(cfg.replyflow, env, filepath.Join(cfg.workDir, "worker.log"))
	if r.gateway, err = harness.Gateway(cfg.replyflow, env, filepath.Join(cfg.workDir, "gateway.log")); err != nil {
		return report{}, err
	}
	for _, p := range []*harness.Proc{r.worker, r.gateway} {
		if err := p.Start(); err != nil {
			return report{}, err
		}
		defer p.Stop()
	}

	talking, stopTalking := context.WithCancel(ctx)
	kills := make(chan []kill, 1)
	go func() { kills <- r.killUntil(talking) }()
	messages := r.converse(ctx)
	stopTalking()
	killed := <-kills
	if err := r.ensureRunning(ctx); err != nil {
		return report{}, err
	}
	fmt.Fprintf(cfg.progress, "chaos: %d messages sent, %d kills; waiting for the answers\n", len(messages), len(killed))
	return r.check(ctx, messages, killed)
}

// converse runs the conversations, each message carrying a unique token
// the demo model echoes back.
func (r *rig) converse(ctx context.Context) []sent {
	var mu sync.Mutex
	var out []sent
	var wg sync.WaitGroup
	gaps := make([][]time.Duration, r.cfg.sessions)
	for i := range gaps {
		for range r.cfg.messages {
			gaps[i] = append(gaps[i], time.Duration(r.talkRnd.Int63n(int64(r.cfg.gap)+1)))
		}
	}
	for i := range r.cfg.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chat := telegramtest.Private(int64(7_000_000 + i))
			user := telegramtest.User{ID: chat.ID, FirstName: "Chaos"}
			for k := range r.cfg.messages {
				token := "[c" + strconv.Itoa(i) + "-m" + strconv.Itoa(k) + "]"
				msg := r.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user, Text: "hello " + token})
				mu.Lock()
				out = append(out, sent{chat: chat.ID, msg: msg, token: token})
				mu.Unlock()
				select {
				case <-time.After(gaps[i][k]):
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// killUntil kills a process at random moments until ctx ends, and at
// least once each. Victims come in shuffled rounds, so every kind is hit
// as often as the others.
func (r *rig) killUntil(ctx context.Context) []kill {
	victims := []string{"worker", "gateway"}
	if r.cfg.killServer {
		victims = append(victims, "server")
	}
	var out []kill
	var round []string
	for {
		wait := r.cfg.killEvery/2 + time.Duration(r.killRnd.Int63n(int64(r.cfg.killEvery)+1))
		// Every kind is killed at least once, however short the run.
		if len(out) >= len(victims) {
			select {
			case <-ctx.Done():
				return out
			case <-time.After(wait):
			}
		} else {
			time.Sleep(wait)
		}
		if err := r.ensureRunning(ctx); err != nil {
			fmt.Fprintf(r.cfg.progress, "chaos: %v\n", err)
		}
		if len(round) == 0 {
			round = append([]string(nil), victims...)
			r.killRnd.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		victim := round[0]
		round = round[1:]
		k := kill{victim: victim, at: time.Now()}
		fmt.Fprintf(r.cfg.progress, "chaos: SIGKILL %s\n", victim)
		down := time.Duration(200+r.killRnd.Intn(800)) * time.Millisecond
		switch victim {
		case "worker":
			r.worker.Kill()
			time.Sleep(down)
			_ = r.worker.Start()
		case "gateway":
			r.gateway.Kill()
			time.Sleep(down)
			_ = r.gateway.Start()
		case "server":
			r.temporal.Kill()
			time.Sleep(down)
			if err := r.temporal.Restart(context.Background()); err != nil {
				fmt.Fprintf(r.cfg.progress, "chaos: %v\n", err)
			}
		}
		k.up = time.Now()
		out = append(out, k)
	}
}

// ensureRunning restarts whatever died on its own (a process that exits
// when it loses the server is a finding too: the report counts them).
func (r *rig) ensureRunning(ctx context.Context) error {
	if !r.temporal.Running() {
		if err := r.temporal.Restart(ctx); err != nil {
			return err
		}
	}
	for _, p := range []*harness.Proc{r.worker, r.gateway} {
		if !p.Running() {
			fmt.Fprintf(r.cfg.progress, "chaos: %s exited on its own; starting it again\n%s\n", p.Name, p.Tail())
			r.mu.Lock()
			r.deadProcs++
			r.mu.Unlock()
			if err := p.Start(); err != nil {
				return err
			}
		}
	}
	return nil
}
