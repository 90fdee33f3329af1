package main

import (
	"context"
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

// The short configuration of `make chaos`: a few conversations while the
// worker, the gateway and the Temporal server are each killed at least
// once. Nothing may be lost or left behind.
func TestShortChaosLosesNothing(t *testing.T) {
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	_, err := os.Stat(cli)
	require.NoError(t, err, "the chaos test needs the Temporal CLI: run `make test`, which builds it, or set REPLYFLOW_TEST_TEMPORAL_CLI")
	bin, err := harness.Build(t.TempDir())
	require.NoError(t, err)

	cfg := defaultConfig()
	cfg.temporalCLI, cfg.replyflow, cfg.workDir = cli, bin, t.TempDir()
	cfg.sessions, cfg.messages = 4, 5
	cfg.gap, cfg.killEvery = 1500*time.Millisecond, 2*time.Second
	cfg.killServer, cfg.seed = true, shortChaosSeed
	cfg.settle = 3 * time.Minute
	if testing.Verbose() {
		cfg.progress = os.Stderr
	}
	t.Logf("seed %d (fixed, so every run attacks alike; `make chaos` takes a fresh one)", cfg.seed)

	rep, err := run(context.Background(), cfg)
	require.NoError(t, err)
	var out testWriter
	rep.print(&out)
	t.Log("\n" + string(out))
	assert.Equal(t, 20, rep.sent)
	for _, victim := range []string{"worker", "gateway", "server"} {
		assert.GreaterOrEqual(t, rep.kills[victim], 1, "the %s was never killed", victim)
	}
	assert.Zero(t, rep.unanswered, "lost messages")
	assert.Zero(t, rep.uncleared, "reactions left behind")
	assert.Zero(t, rep.notIdle, "stuck sessions")
	assert.Zero(t, rep.exits, "processes that died on their own")
	assert.Equal(t, rep.explained, rep.duplicates, "duplicates no kill in flight explains")
	assert.GreaterOrEqual(t, rep.turns, 1)
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}
