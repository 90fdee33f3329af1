// Command replyflow-bench measures what durability costs: the raw
// SignalWithStart rate of the Temporal server against replyflow's real
// ingress path; end-to-end latency from an accepted inbound message to
// its first delivered chunk, for sessions that pause like people between
// a reply and their next message, then with no pause (the machine's
// capacity) and with a cache of one session (every task replays);
// history events and platform calls per turn; and the worker's memory
// with many idle sessions; how soon answers come after the worker and the
// gateway crash. Every comparison is a ratio taken in the same
// run. `make bench` runs it against a dev server it starts; -address
// points it at an existing server instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

type options struct {
	// only names the stages to run (their first word); empty runs all.
	only        []string
	address     string
	temporalCLI string
	replyflow   string
	signals     int
	concurrency int
	ingressIDs  int
	sessions    []int
	messages    int
	think       time.Duration
	idle        []int
	workDir     string
	codecKeys   string
	cluster     clusterOptions
	// unversioned runs the workers without worker versioning, to
	// measure what versioning costs.
	unversioned bool
	// rawEnv is added to the workers' environment as it is (OPENAI_*).
	rawEnv []string
	// metricsURL is the dev server's Prometheus endpoint ("" for an
	// existing server): its action counter counts heartbeats.
	metricsURL string
	// baseline is the replyflow binary measured beside o.replyflow,
	// built from the git revision baselineRev.
	baseline     string
	baselineRev  string
	withBaseline bool
	// crowd are the platforms of the streaming crowd.
	crowd []string
	// saturationRounds is how many times each build's saturation is
	// measured, alternating, so the machine's drift over the run falls
	// on both alike.
	saturationRounds int
}

func main() {
	if os.Getenv(mcpStdioEnv) == "1" {
		if err := serveMCPStdio(); err != nil {
			fmt.Fprintln(os.Stderr, "replyflow-bench MCP server:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var sessions, idle, only string
	flag.StringVar(&o.address, "address", "", "an existing Temporal server (host:port) instead of a dev server started here")
	flag.StringVar(&o.temporalCLI, "temporal", "bin/temporal", "the Temporal CLI that runs the dev server")
	flag.StringVar(&o.replyflow, "replyflow", "", "the replyflow binary the worker runs from (built when empty)")
	flag.IntVar(&o.signals, "signals", 8000, "signals per ingress measurement")
	flag.IntVar(&o.concurrency, "concurrency", 50, "concurrent callers in the ingress measurement")
	flag.IntVar(&o.ingressIDs, "ingress-sessions", 500, "distinct sessions the ingress signals go to")
	flag.StringVar(&sessions, "sessions", "1,10,50", "concurrent sessions of the end-to-end measurement, comma-separated")
	flag.IntVar(&o.messages, "messages", 20, "messages per session in the end-to-end measurement")
	flag.DurationVar(&o.think, "think", 3*time.Second, "mean pause of a session between a reply and its next message, as a person reads and types (a saturation run with no pause follows)")
	flag.StringVar(&idle, "idle", "1000,10000", "open idle sessions at which the worker's memory is measured (empty: skip)")
	flag.StringVar(&o.codecKeys, "codec-keys", "", "encrypt payloads: REPLYFLOW_CODEC_KEYS for the worker and this program's client (empty: off)")
	flag.BoolVar(&o.unversioned, "unversioned", false, "run the workers unversioned (REPLYFLOW_WORKER_VERSIONING=false), to compare")
	flag.IntVar(&o.saturationRounds, "saturation-rounds", 2, "-baseline: how many alternating saturation runs of each build")
	flag.StringVar(&o.baselineRev, "baseline-rev", "HEAD", "-baseline: the baseline is replyflow built from this git revision of the repository (a commit, a tag, HEAD~1; by default the last commit, so the working tree's change is measured), to measure a change before and after in one run; its workers must serve the workflow type this build starts")
	flag.BoolVar(&o.withBaseline, "baseline", true, "also measure the cost per turn and the saturation of the build of -baseline-rev")
	var clusterWorkers string
	flag.BoolVar(&o.cluster.on, "cluster", false, "also measure a real Temporal cluster on PostgreSQL beside the dev server, with one, two and three workers")
	flag.StringVar(&o.cluster.server, "temporal-server", "bin/temporal-server", "-cluster: the Temporal server binary")
	flag.StringVar(&o.cluster.sqlTool, "sql-tool", "bin/temporal-sql-tool", "-cluster: temporal-sql-tool")
	flag.StringVar(&o.cluster.postgres, "postgres", harness.DefaultPostgres(), "-cluster: PostgreSQL (a postgres:// URL whose user may create databases) for the cluster and the stores")
	flag.IntVar(&o.cluster.nodes, "nodes", 1, "-cluster: Temporal server nodes")
	flag.StringVar(&clusterWorkers, "cluster-workers", "1,2,3", "-cluster: worker processes, comma-separated")
	flag.IntVar(&o.cluster.sessions, "cluster-sessions", 50, "-cluster: concurrent sessions")
	flag.StringVar(&only, "only", "", "run only these stages, by their first word, comma-separated: ingress, end, cost, live, crash, idle, mcp, media, dev; crowd runs the 20 streaming chats of live alone")
	var crowdOn string
	flag.StringVar(&crowdOn, "crowd", "telegram,slack,discord", "the platforms of the streaming crowd (live replies), comma-separated")
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
	}
	var err error
	o.crowd = strings.Split(crowdOn, ",")
	if o.sessions, err = intList(sessions); err == nil {
		o.idle, err = intList(idle)
	}
	if err == nil {
		o.cluster.workers, err = intList(clusterWorkers)
	}
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "replyflow-bench:", err)
		os.Exit(1)
	}
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(o options) error {
	ctx := context.Background()
	o.workDir = harness.MustMkdirTemp("replyflow-bench-")
	defer os.RemoveAll(o.workDir)
	if o.replyflow == "" {
		fmt.Fprintln(os.Stderr, "building replyflow…")
		bin, err := harness.Build(o.workDir)
		if err != nil {
			return err
		}
		o.replyflow = bin
	}
	if o.withBaseline {
		fmt.Fprintf(os.Stderr, "building replyflow at %s…\n", o.baselineRev)
		bin, err := harness.BuildRev(o.workDir, "replyflow-before", o.baselineRev)
		if err != nil {
			return err
		}
		o.baseline = bin
	}
	server := "existing server " + o.address
	if o.address == "" {
		metricsPort, err := harness.FreePort()
		if err != nil {
			return err
		}
		t, err := harness.StartTemporal(ctx, o.temporalCLI, "", filepath.Join(o.workDir, "temporal.log"), "--metrics-port", strconv.Itoa(metricsPort))
		if err != nil {
			return err
		}
		defer t.Stop()
		o.address, server = t.Address, "dev server (temporal CLI, in-memory SQLite)"
		o.metricsURL = "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics"
	}
	c, err := harness.Dial(ctx, o.address, o.codecKeys)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", o.address, err)
	}
	defer c.Close()

	fmt.Printf("replyflow-bench  %s  %d cores  %s  Temporal: %s\n\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), memTotal(), server)
	var rows [][]string
	stage := func(name string, f func() ([][]string, error)) error {
		if len(o.only) > 0 && !slices.Contains(o.only, strings.Fields(name)[0]) {
			return nil
		}
		fmt.Fprintf(os.Stderr, "%s…\n", name)
		r, err := f()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, r...)
		return nil
	}
	if err := stage("ingress", func() ([][]string, error) { return benchIngress(ctx, c, o) }); err != nil {
		return err
	}
	if err := stage("end to end", func() ([][]string, error) { return benchEndToEnd(ctx, c, o) }); err != nil {
		return err
	}
	if o.baseline != "" {
		if err := stage("cost per turn, before and after "+o.baselineRev, func() ([][]string, error) { return benchTurnCost(ctx, c, o) }); err != nil {
			return err
		}
	}
	if err := stage("live replies", func() ([][]string, error) { return benchStreaming(ctx, c, o) }); err != nil {
		return err
	}
	if slices.Contains(o.only, "crowd") && !slices.Contains(o.only, "live") {
		if err := stage("crowd of streaming chats", func() ([][]string, error) { return benchStreamingCrowd(ctx, c, o) }); err != nil {
			return err
		}
	}
	if err := stage("crash recovery", func() ([][]string, error) { return benchCrash(ctx, c, o) }); err != nil {
		return err
	}
	if len(o.idle) > 0 {
		if err := stage("idle sessions", func() ([][]string, error) { return benchIdle(ctx, c, o) }); err != nil {
			return err
		}
	}
	if err := stage("media of concurrent photos", func() ([][]string, error) { return benchMedia(ctx, c, o) }); err != nil {
		return err
	}
	if err := stage("mcp servers at a worker's start", func() ([][]string, error) { return benchMCP(ctx, c, o) }); err != nil {
		return err
	}
	if o.cluster.on {
		if err := stage("dev server and cluster, by workers", func() ([][]string, error) { return benchCluster(ctx, c, o) }); err != nil {
			return err
		}
	}
	printTable(rows)
	return nil
}

func printTable(rows [][]string) {
	width := [3]int{}
	rows = append([][]string{{"measure", "value", "target"}}, rows...)
	for _, r := range rows {
		for i, cell := range r {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	for i, r := range rows {
		fmt.Printf("%-*s  %-*s  %s\n", width[0], r[0], width[1], r[1], r[2])
		if i == 0 {
			fmt.Println(strings.Repeat("-", width[0]+width[1]+width[2]+4))
		}
	}
}

// memTotal is the machine's memory, from /proc/meminfo.
func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return fmt.Sprintf("%.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return "memory unknown"
}
