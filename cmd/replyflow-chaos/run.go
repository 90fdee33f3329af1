package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

type config struct {
	temporalCLI, replyflow string
	platforms              []string // see platformNames
	sessions, messages     int      // on each platform
	gap, killEvery         time.Duration
	killServer             bool
	clearDelay             time.Duration
	settle                 time.Duration // most time to wait for the last answers
	seed                   int64
	workDir                string
	progress               io.Writer
	codecKeys              string // REPLYFLOW_CODEC_KEYS of the worker, the gateway and the checks; "": off
	// cluster, when set, runs a real Temporal cluster on PostgreSQL with
	// several workers and gateways instead of one dev server, worker and
	// gateway (cluster.go).
	cluster *clusterConfig
}

func defaultConfig() config {
	return config{platforms: slices.Clone(allPlatforms), clearDelay: 2 * time.Second, settle: 4 * time.Minute, progress: io.Discard}
}

// kill is one kill: whom (its kind, and which of them), when, and when
// the victim was back. aimedAt is the platform whose post a worker kill
// followed at once ("" when none came in time).
type kill struct {
	victim, aimedAt string
	which           int
	at, up          time.Time
}

// rig is the system under attack.
type rig struct {
	cfg       config
	platforms []platform
	// address is Temporal's, as every process dials it.
	address string
	// servers are the Temporal processes (the dev server, or the
	// cluster's nodes); restartServer starts server i again and waits
	// until it answers.
	servers       []*harness.Proc
	restartServer func(ctx context.Context, i int) error
	workers       []*harness.Proc
	gateways      []*harness.Proc
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
	began := time.Now()
	r := &rig{cfg: cfg, killRnd: rand.New(rand.NewSource(cfg.seed)), talkRnd: rand.New(rand.NewSource(cfg.seed + 1))}
	fmt.Fprintf(cfg.progress, "chaos: seed %d, %s: %d sessions × %d messages each, work dir %s\n",
		cfg.seed, strings.Join(cfg.platforms, ", "), cfg.sessions, cfg.messages, cfg.workDir)
	extra := map[string]string{
		"DEBOUNCE":               "300ms",
		"DEMO_MODEL_DELAY":       "300ms",
		"REACTION_CLEAR_DELAY":   cfg.clearDelay.String(),
		"ERROR_CLEAR_DELAY":      cfg.clearDelay.String(),
		"TURN_HEARTBEAT_TIMEOUT": "5s",
		"DELIVERY_TIMEOUT":       "5s",
		"LOG_LEVEL":              "info",
		"CODEC_KEYS":             cfg.codecKeys,
	}
	for _, name := range cfg.platforms {
		p := newPlatform(name)
		defer p.close()
		r.platforms = append(r.platforms, p)
	}
	var stop func()
	var err error
	if cfg.cluster != nil {
		stop, err = r.startCluster(ctx, extra)
	} else {
		stop, err = r.startDev(ctx, extra)
	}
	defer stop()
	if err != nil {
		return report{}, err
	}
	opened, err := r.open(ctx)
	if err != nil {
		return report{}, err
	}
	talking, stopTalking := context.WithCancel(ctx)
	kills := make(chan []kill, 1)
	go func() { kills <- r.killUntil(talking) }()
	messages := r.converse(ctx, opened)
	stopTalking()
	talked := time.Now()
	killed := <-kills
	if err := r.ensureRunning(ctx); err != nil {
		return report{}, err
	}
	total := 0
	for _, ms := range messages {
		total += len(ms)
	}
	fmt.Fprintf(cfg.progress, "chaos: %d messages sent, %d kills; waiting for the answers from %s\n", total, len(killed), time.Now().Format(timeFormat))
	rep, err := r.check(ctx, messages, killed)
	rep.talking, rep.answered, rep.took = talked.Sub(began), rep.answeredAt.Sub(talked), time.Since(began)
	return rep, err
}

// openWithin bounds the opening: the first answers of every conversation
// with nothing killed yet.
const openWithin = time.Minute

// open sends the first message of every conversation of the platforms
// that open first (see opener), before any kill, and waits until each is
// answered. It returns those messages, by platform.
func (r *rig) open(ctx context.Context) ([][]sent, error) {
	out := make([][]sent, len(r.platforms))
	ctx, cancel := context.WithTimeout(ctx, openWithin)
	defer cancel()
	for pi, p := range r.platforms {
		o, ok := p.(opener)
		if !ok {
			continue
		}
		if err := o.awaitGateway(ctx); err != nil {
			return nil, fmt.Errorf("%s: the gateway did not connect within %s: %w", p.name(), openWithin, err)
		}
		for i := range r.cfg.sessions {
			out[pi] = append(out[pi], p.say(i, 0, token(i, 0)))
		}
	}
	for pi, p := range r.platforms {
		if err := p.waitFor(ctx, func() bool { return !slices.ContainsFunc(out[pi], func(m sent) bool { return !p.answered(m) }) }); err != nil {
			return nil, fmt.Errorf("%s: the first messages were not all answered within %s, before any kill: %w", p.name(), openWithin, err)
		}
	}
	if len(slices.Concat(out...)) > 0 {
		fmt.Fprintf(r.cfg.progress, "chaos: every conversation's first message answered on the platforms that open first; the kills start\n")
	}
	return out, nil
}

// token is the text message k of conversation conv carries.
func token(conv, k int) string { return "[c" + strconv.Itoa(conv) + "-m" + strconv.Itoa(k) + "]" }

// converse runs the conversations on every platform at once, each
// message carrying a token unique on its platform that the demo model
// echoes back. A platform's conversations go on after what opened sent.
// It returns each platform's messages, in its order.
func (r *rig) converse(ctx context.Context, opened [][]sent) [][]sent {
	var mu sync.Mutex
	out := make([][]sent, len(r.platforms))
	copy(out, opened)
	var wg sync.WaitGroup
	gaps := make([][][]time.Duration, len(r.platforms))
	for pi := range gaps {
		gaps[pi] = make([][]time.Duration, r.cfg.sessions)
		for i := range gaps[pi] {
			for range r.cfg.messages {
				gaps[pi][i] = append(gaps[pi][i], time.Duration(r.talkRnd.Int63n(int64(r.cfg.gap)+1)))
			}
		}
	}
	for pi, p := range r.platforms {
		for i := range r.cfg.sessions {
			wg.Add(1)
			first := 0
			if len(opened[pi]) > 0 {
				first = 1
			}
			go func() {
				defer wg.Done()
				for k := first; k < r.cfg.messages; k++ {
					m := p.say(i, k, token(i, k))
					mu.Lock()
					out[pi] = append(out[pi], m)
					mu.Unlock()
					select {
					case <-time.After(gaps[pi][i][k]):
					case <-ctx.Done():
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	return out
}

// killUntil kills a process at random moments until ctx ends, and each
// kind at least once. Victims come in shuffled rounds, so every kind is
// hit as often as the others; a round kills the worker once per
// platform, each time right after that platform accepted a post (see
// aimAt), so that every platform has a delivery caught in flight.
func (r *rig) killUntil(ctx context.Context) []kill {
	type target struct {
		victim string
		aim    platform // the worker's kills only
	}
	var victims []target
	for _, p := range r.platforms {
		victims = append(victims, target{"worker", p})
	}
	victims = append(victims, target{victim: "gateway"})
	if r.cfg.killServer {
		victims = append(victims, target{victim: "server"})
	}
	var out []kill
	var round []target
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
			round = append([]target(nil), victims...)
			r.killRnd.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		t := round[0]
		round = round[1:]
		k := kill{victim: t.victim}
		down := time.Duration(200+r.killRnd.Intn(800)) * time.Millisecond
		if t.aim != nil && aimAt(t.aim) {
			k.aimedAt = t.aim.name()
		}
		procs := map[string][]*harness.Proc{"worker": r.workers, "gateway": r.gateways, "server": r.servers}[t.victim]
		k.which = r.killRnd.Intn(len(procs))
		proc := procs[k.which]
		k.at = time.Now()
		proc.Kill()
		r.logKill(k)
		time.Sleep(down)
		if t.victim != "server" {
			_ = proc.Start()
		} else if err := r.restartServer(context.Background(), k.which); err != nil {
			fmt.Fprintf(r.cfg.progress, "chaos: %v\n", err)
		}
		k.up = time.Now()
		out = append(out, k)
	}
}

func (r *rig) logKill(k kill) {
	victim := k.victim
	if n := len(map[string][]*harness.Proc{"worker": r.workers, "gateway": r.gateways, "server": r.servers}[k.victim]); n > 1 {
		victim += fmt.Sprintf(" %d of %d", k.which+1, n)
	}
	if k.aimedAt != "" {
		fmt.Fprintf(r.cfg.progress, "chaos: %s SIGKILL %s, just after a %s post\n", k.at.Format(timeFormat), victim, k.aimedAt)
		return
	}
	fmt.Fprintf(r.cfg.progress, "chaos: %s SIGKILL %s\n", k.at.Format(timeFormat), victim)
}

// ensureRunning restarts whatever died on its own (a process that exits
// when it loses the server is a finding too: the report counts them).
func (r *rig) ensureRunning(ctx context.Context) error {
	for i, s := range r.servers {
		if !s.Running() {
			if err := r.restartServer(ctx, i); err != nil {
				return err
			}
		}
	}
	for _, p := range slices.Concat(r.workers, r.gateways) {
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
