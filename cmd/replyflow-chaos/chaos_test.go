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
	if testing.Verbose() {
		cfg.progress = os.Stderr
	}
	t.Logf("seed %d (fixed, so every run attacks alike; `make chaos` takes a fresh one)", cfg.seed)

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
	assert.GreaterOrEqual(t, rep.aimed["discord"], 1, "no worker kill came right after a Discord post")
	assert.True(t, rep.ok(), "the report fails a check")
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}
