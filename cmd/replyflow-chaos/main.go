// Command replyflow-chaos runs conversations through fake platforms
// (Telegram's Bot API, Slack over Socket Mode, Discord's gateway and
// REST API; -platform picks, all by default) and the demo model while killing, at random moments, the
// worker (SIGKILL, aimed right after a chunk was posted), the gateway
// (SIGKILL) and the Temporal dev server (SIGKILL, restarted on its
// database file), then checks that nothing was lost: every message
// answered, no reaction left behind, every session idle, and duplicates
// only where a kill hit a delivery in flight on Telegram, which has no
// idempotency key. On Slack, whose posts carry their key and are looked
// up before a retry posts, and on Discord, whose sends carry an enforced
// nonce, no duplicate is allowed. It exits 1 when a
// check fails. `make chaos` runs the long configuration; a short one
// runs inside `make test`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

func main() { os.Exit(chaos()) }

// chaos runs and returns the exit code, so that its deferred clean-up
// (the replyflow binary it built) runs on a failure too.
func chaos() int {
	cfg := defaultConfig()
	platforms := flag.String("platform", "all", "all at once, or a comma-separated list of telegram, slack, discord")
	flag.StringVar(&cfg.temporalCLI, "temporal", "bin/temporal", "the Temporal CLI that runs the dev server")
	flag.StringVar(&cfg.replyflow, "replyflow", "", "the replyflow binary (built when empty)")
	flag.IntVar(&cfg.sessions, "sessions", 20, "conversations at once on each platform")
	flag.IntVar(&cfg.messages, "messages", 40, "messages per conversation")
	flag.DurationVar(&cfg.gap, "gap", 2*time.Second, "most time between two messages of a conversation")
	flag.DurationVar(&cfg.killEvery, "kill-every", 3*time.Second, "mean time between two kills")
	flag.BoolVar(&cfg.killServer, "kill-server", true, "also kill and restart the Temporal dev server")
	flag.Int64Var(&cfg.seed, "seed", time.Now().UnixNano(), "random seed (printed, to replay a run's choices)")
	flag.StringVar(&cfg.codecKeys, "codec-keys", "", "encrypt payloads: REPLYFLOW_CODEC_KEYS for the worker, the gateway and the checks (empty: off)")
	cluster := flag.Bool("cluster", false, "run a real Temporal cluster on PostgreSQL with several workers and gateways (make cluster) instead of one dev server, worker and gateway")
	cc := clusterConfig{}
	flag.StringVar(&cc.server, "temporal-server", "bin/temporal-server", "cluster: the Temporal server binary")
	flag.StringVar(&cc.sqlTool, "sql-tool", "bin/temporal-sql-tool", "cluster: temporal-sql-tool")
	flag.StringVar(&cc.postgres, "postgres", harness.DefaultPostgres(), "cluster: PostgreSQL (a postgres:// URL whose user may create databases) for Temporal and the store")
	flag.IntVar(&cc.nodes, "nodes", 2, "cluster: Temporal server nodes")
	flag.IntVar(&cc.workers, "workers", 3, "cluster: replyflow workers")
	flag.IntVar(&cc.gateways, "gateways", 2, "cluster: replyflow gateways, behind one balancer")
	flag.Parse()
	if *cluster {
		cfg.cluster = &cc
	}
	var err error
	if cfg.platforms, err = platformNames(*platforms); err != nil {
		fmt.Fprintln(os.Stderr, "replyflow-chaos:", err)
		return 2
	}
	if cfg.replyflow == "" {
		dir := harness.MustMkdirTemp("replyflow-chaos-bin-")
		defer os.RemoveAll(dir)
		bin, err := harness.Build(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "replyflow-chaos:", err)
			return 1
		}
		cfg.replyflow = bin
	}
	cfg.workDir = harness.MustMkdirTemp("replyflow-chaos-")
	cfg.progress = os.Stderr
	rep, err := run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replyflow-chaos:", err, "\n(logs kept in", cfg.workDir+")")
		fmt.Fprintln(os.Stderr, repeatHint(cfg.seed))
		return 1
	}
	rep.print(os.Stdout)
	if !rep.ok() {
		fmt.Println("\nFAILED (logs kept in " + cfg.workDir + ")")
		fmt.Println(repeatHint(cfg.seed))
		return 1
	}
	os.RemoveAll(cfg.workDir)
	return 0
}

// repeatHint says how to run a failed run's choices again.
func repeatHint(seed int64) string {
	return fmt.Sprintf("seed %d: repeat this run's choices with `make chaos CHAOS_FLAGS=-seed=%d`", seed, seed)
}
