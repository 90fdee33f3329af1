package main

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startProcess runs sh with args after its script, so they show in its
// command line, and stops it when the test ends.
func startProcess(t *testing.T, args ...string) (*exec.Cmd, <-chan struct{}) {
	cmd := exec.Command("sh", append([]string{"-c", "trap 'exit 0' TERM; while :; do sleep 0.1; done", "sh"}, args...)...)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, exited
}

func writeLock(t *testing.T, dir string, server int) {
	text := "replyflow 1\nserver " + strconv.Itoa(server) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dev.lock"), []byte(text), 0o644))
}

// A server an earlier run left on the dev directory's database (where no
// parent-death signal killed it) is stopped before the new run starts its
// own; a process that merely got its pid is left alone.
func TestDevLockStopsTheServerAnEarlierRunLeft(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	unrelated, unrelatedExited := startProcess(t, "--db-filename", "/elsewhere/temporal.db")
	writeLock(t, dir, unrelated.Process.Pid)
	lock, err := lockDevDir(dir, time.Second, quiet)
	require.NoError(t, err)
	lock.release()
	select {
	case <-unrelatedExited:
		t.Fatal("a process whose command line names another database was stopped")
	default:
	}

	leftover, leftoverExited := startProcess(t, "--db-filename", filepath.Join(dir, "temporal.db"))
	writeLock(t, dir, leftover.Process.Pid)
	lock, err = lockDevDir(dir, time.Second, quiet)
	require.NoError(t, err)
	defer lock.release()
	select {
	case <-leftoverExited:
	default:
		require.NoError(t, syscall.Kill(leftover.Process.Pid, 0))
		assert.Empty(t, commandLine(leftover.Process.Pid), "lockDevDir returned while the leftover server still runs")
	}

	_, err = lockDevDir(dir, 300*time.Millisecond, quiet)
	require.Error(t, err, "the directory is in use while the lock is held")
	assert.Contains(t, err.Error(), "another `replyflow dev` (pid "+strconv.Itoa(os.Getpid())+")")
}

// The dev server's own words say why it could not start: one clear
// reason instead of a guess about the port.
func TestDevServerStartFailureNamesTheCause(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "temporal.log")
	server := &devServer{logPath: log, dbFile: filepath.Join(dir, "temporal.db")}
	for logged, want := range map[string]string{
		"unable to start: database is locked (5) (SQLITE_BUSY)":   "another process holds it",
		"sql: cannot start a transaction within a transaction":    "another process holds it",
		"listen tcp 127.0.0.1:7233: bind: address already in use": "a port is in use by another program",
		"panic: something else entirely":                          "exited at start; see " + log,
	} {
		require.NoError(t, os.WriteFile(log, []byte("earlier run: database is locked\n"), 0o644))
		server.logStart = int64(len("earlier run: database is locked\n"))
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(logged + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		assert.ErrorContains(t, server.startFailure("127.0.0.1:7233"), want, logged)
	}
}

// A process runs until it exits; exited and not yet reaped (a zombie), it
// no longer does.
func TestRunningTellsALiveProcessFromAnExitedOne(t *testing.T) {
	assert.True(t, running(os.Getpid()))
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	assert.True(t, running(cmd.Process.Pid))
	require.NoError(t, cmd.Process.Kill())
	require.Eventually(t, func() bool { return !running(cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond,
		"killed, it is a zombie until waited for")
	_ = cmd.Wait()
	assert.False(t, running(cmd.Process.Pid))
}
