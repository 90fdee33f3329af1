package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// shortChaosSeed fixes what the short run kills and says, so `make test`
// attacks the same way every time; `make chaos` takes a fresh seed.
const shortChaosSeed = 20261123

// The short configuration of `make chaos`: a few conversations on
// Telegram, Slack and Discord at once, against one server, worker and
// gateway, while each of them is killed at least once (the worker once
// right after a post on each platform). Nothing may be lost or left
// behind; on Slack and Discord nothing may be posted twice either.
func TestShortChaosLosesNothing(t *testing.T) {
	rep := checkShortRun(t, shortConfig(t))
	// The one worker is the one delivering: a kill right after a post
	// catches the delivery in flight, which the nonce must answer.
	assert.GreaterOrEqual(t, rep.aimed["discord"], 1, "no worker kill came right after a Discord post")
}

// shortConfig is the short run's configuration on the dev server.
func shortConfig(t *testing.T) config {
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	_, err := os.Stat(cli)
	require.NoError(t, err, "the chaos test needs the Temporal CLI: run `make test`, which builds it, or set REPLYFLOW_TEST_TEMPORAL_CLI")
	bin, err := harness.Build(t.TempDir())
	require.NoError(t, err)

	cfg := defaultConfig()
	cfg.temporalCLI, cfg.replyflow, cfg.workDir = cli, bin, keptOnFailure(t)
	cfg.platforms = []string{"telegram", "slack", "discord"}
	// Long enough that the kills (each worker kill waits for a post)
	// mostly land while the conversations go on.
	cfg.sessions, cfg.messages = 4, 8
	cfg.gap, cfg.killEvery = 2*time.Second, 2*time.Second
	cfg.killServer, cfg.seed = true, shortChaosSeed
	cfg.settle = 3 * time.Minute
	// Encrypted, as production should run: kills must not leave a payload
	// that a restarted process cannot read.
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg.codecKeys = "chaos:" + base64.StdEncoding.EncodeToString(key)
	// A failed run's histories are read with it (REPLYFLOW_CODEC_KEYS):
	// it is this run's own key, kept beside them only.
	require.NoError(t, os.WriteFile(filepath.Join(cfg.workDir, "codec.keys"), []byte(cfg.codecKeys+"\n"), 0o600))
	if testing.Verbose() {
		cfg.progress = os.Stderr
	}
	t.Logf("seed %d (fixed, so every run attacks alike; `make chaos` takes a fresh one)", cfg.seed)
	return cfg
}

// keptOnFailure is a work directory for the run's processes, removed when
// the test passes and kept, with its path in the log, when it fails: the
// logs of the gateway, the workers and the server, the store, and the
// dev server's database explain what the report counts.
func keptOnFailure(t *testing.T) string {
	dir, err := os.MkdirTemp("", "replyflow-chaos-"+t.Name()+"-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run's logs, store and Temporal database are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// The short configuration of `make cluster`: the same conversations and
// checks on a real Temporal cluster of two nodes on PostgreSQL (the store
// too), three workers and two gateways behind one balancer, Telegram in
// webhook mode through it; a worker (once right after a post on each
// platform), a gateway and a server node are each killed at least once.
func TestShortClusterChaosLosesNothing(t *testing.T) {
	cfg := shortConfig(t)
	cfg.cluster = &clusterConfig{
		server: clusterBinary(t, "REPLYFLOW_TEST_TEMPORAL_SERVER", "temporal-server"), sqlTool: clusterBinary(t, "REPLYFLOW_TEST_TEMPORAL_SQL_TOOL", "temporal-sql-tool"),
		postgres: testPostgres(t), nodes: 2, workers: 3, gateways: 2,
	}
	rep := checkShortRun(t, cfg)
	// Which of the three workers delivered a post is not known: a kill
	// right after one hits the delivery in flight one time in three.
	total := 0
	for _, n := range rep.aimed {
		total += n
	}
	assert.GreaterOrEqual(t, total, 1, "no worker kill came right after a post")
}

// clusterBinary is a binary of the real Temporal server that `make test`
// builds into bin/, or the one env names.
func clusterBinary(t *testing.T, env, name string) string {
	path := os.Getenv(env)
	if path == "" {
		path, _ = filepath.Abs("../../bin/" + name)
	}
	_, err := os.Stat(path)
	require.NoError(t, err, "the cluster tests need %s: run `make test`, which builds it from the Go module proxy, or set %s", name, env)
	return path
}

// testPostgres is the PostgreSQL the cluster runs on: the store suites'
// (REPLYFLOW_TEST_POSTGRES_DSN, else 127.0.0.1:5432 as postgres), skipped
// only when REPLYFLOW_TEST_POSTGRES=off says so, as they are.
func testPostgres(t *testing.T) string {
	if os.Getenv("REPLYFLOW_TEST_POSTGRES") == "off" {
		t.Skip("SKIPPED: the Temporal cluster on PostgreSQL, because REPLYFLOW_TEST_POSTGRES=off")
	}
	return harness.DefaultPostgres()
}

// checkShortRun runs cfg and checks the report as every short run must
// pass.
func checkShortRun(t *testing.T, cfg config) report {
	rep, err := run(context.Background(), cfg)
	require.NoError(t, err)
	var out testWriter
	rep.print(&out)
	t.Log("\n" + string(out))
	for _, victim := range []string{"worker", "gateway", "server"} {
		assert.GreaterOrEqual(t, rep.kills[victim], 1, "the %s was never killed", victim)
	}
	assert.Zero(t, rep.exits, "processes that died on their own")
	for _, name := range cfg.platforms {
		p, ok := rep.platform(name)
		require.True(t, ok, "no report for %s", name)
		assert.Equal(t, 32, p.sent, name)
		assert.Zero(t, p.unanswered, "lost messages on %s", name)
		assert.Zero(t, p.uncleared, "reactions left behind on %s", name)
		assert.Zero(t, p.notIdle, "stuck sessions on %s", name)
		assert.Equal(t, p.explained, p.duplicates, "duplicates no kill in flight explains on %s", name)
		assert.GreaterOrEqual(t, p.turns, 1, name)
	}
	slack, _ := rep.platform("slack")
	assert.Zero(t, slack.duplicates, "Slack posts carry their key and a retry looks for it: none may be posted twice")
	discord, _ := rep.platform("discord")
	assert.Zero(t, discord.duplicates, "Discord sends carry an enforced nonce: none may be posted twice")
	assert.True(t, rep.ok(), "the report fails a check")
	return rep
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}
