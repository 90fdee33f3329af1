package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/cmd/internal/harness"
)

// realProcesses starts a gateway of bin with env, and returns how to start
// worker n beside it, for tests that kill workers (SIGKILL) as a crash
// would. Every process is killed when the test ends, and a worker's log is
// shown when the test failed.
func realProcesses(t *testing.T, bin, dir string, env []string) (startWorker func(n int) *harness.Proc) {
	t.Helper()
	gw, err := harness.Gateway(bin, env, filepath.Join(dir, "gateway.log"))
	require.NoError(t, err)
	return realProcessesWith(t, gw, bin, dir, env)
}

// realProcessesWith is realProcesses with the gateway gw (one serving
// the web chat at an address the test knows, harness.GatewayAt).
func realProcessesWith(t *testing.T, gw *harness.Proc, bin, dir string, env []string) (startWorker func(n int) *harness.Proc) {
	t.Helper()
	require.NoError(t, gw.Start())
	t.Cleanup(func() { gw.Kill() })
	return func(n int) *harness.Proc {
		w := harness.Worker(bin, env, filepath.Join(dir, fmt.Sprintf("worker%d.log", n)))
		require.NoError(t, w.Start())
		t.Cleanup(func() {
			w.Kill()
			if t.Failed() {
				t.Logf("worker %d's log:\n%s", n, w.Tail())
			}
		})
		return w
	}
}

// waitOnFake waits, up to a minute, until cond holds on a fake platform
// (its WaitFor), failing the test with what otherwise.
func waitOnFake(t *testing.T, waitFor func(context.Context, func() bool) error, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, waitFor(ctx, cond), "waiting for %s", what)
}
