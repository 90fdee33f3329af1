package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// How long a new `replyflow dev` waits for the one before it to let go of
// the dev directory, and for a Temporal server it left behind to exit.
const (
	devLockWait      = 20 * time.Second
	leftoverStopWait = 15 * time.Second
)

// devLock is the lock file .replyflow/dev.lock: held (flock) by the one
// `replyflow dev` that uses the directory, released by the kernel however
// that process ends, and naming the Temporal server it started, so the
// next run can find a server that outlived its parent.
type devLock struct {
	file *os.File
}

// lockDevDir takes the dev directory's lock, waiting up to wait for a
// replyflow dev that is still stopping, then stops a Temporal server an earlier run left
// running on the directory's database: started at once, the new server
// would find the port taken or the database in use.
func lockDevDir(dir string, wait time.Duration, logger *slog.Logger) (*devLock, error) {
	path := filepath.Join(dir, "dev.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the dev lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for warned := false; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		holder, _ := readLock(f)
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another `replyflow dev` (pid %d) is using %s: stop it, or set REPLYFLOW_DEV_DIR to another directory", holder.replyflow, dir)
		}
		if !warned {
			logger.Warn("Another replyflow dev is using the dev directory; waiting for it to stop", "pid", holder.replyflow, "dir", dir, "wait", wait)
			warned = true
		}
		time.Sleep(200 * time.Millisecond)
	}
	l := &devLock{file: f}
	previous, _ := readLock(f)
	if err := stopLeftoverServer(previous.server, filepath.Join(dir, "temporal.db"), logger); err != nil {
		l.release()
		return nil, err
	}
	if err := l.write(lockContent{replyflow: os.Getpid()}); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// recordServer names the Temporal server this run started.
func (l *devLock) recordServer(pid int) error {
	return l.write(lockContent{replyflow: os.Getpid(), server: pid})
}

func (l *devLock) release() {
	_ = l.file.Truncate(0)
	_ = l.file.Close() // closing the last descriptor releases the flock
}

type lockContent struct{ replyflow, server int }

func (l *devLock) write(c lockContent) error {
	text := fmt.Sprintf("replyflow %d\nserver %d\n", c.replyflow, c.server)
	if err := l.file.Truncate(0); err != nil {
		return fmt.Errorf("write the dev lock: %w", err)
	}
	if _, err := l.file.WriteAt([]byte(text), 0); err != nil {
		return fmt.Errorf("write the dev lock: %w", err)
	}
	return nil
}

func readLock(f *os.File) (lockContent, error) {
	var c lockContent
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<10))
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, _ := strings.Cut(line, " ")
		pid, _ := strconv.Atoi(value)
		switch name {
		case "replyflow":
			c.replyflow = pid
		case "server":
			c.server = pid
		}
	}
	return c, nil
}

// stopLeftoverServer stops pid if it is still a Temporal dev server on
// dbFile (a pid can be reused by an unrelated process: the command line
// must name the database), and waits until it has exited.
func stopLeftoverServer(pid int, dbFile string, logger *slog.Logger) error {
	if pid <= 0 || !strings.Contains(liveCommandLine(pid), dbFile) {
		return nil
	}
	logger.Warn("A Temporal dev server left by an earlier replyflow dev still holds the database; stopping it", "pid", pid, "db", dbFile)
	// Once the process is known to be that server, it is stopped when it
	// no longer runs: its command line is not read again, as a live
	// process's can read empty for a moment.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		_ = syscall.Kill(pid, sig)
		deadline := time.Now().Add(leftoverStopWait)
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if !running(pid) {
			return nil
		}
	}
	return fmt.Errorf("a Temporal dev server left by an earlier run (pid %d) holds %s and does not stop: stop it yourself (kill -9 %d)", pid, dbFile, pid)
}

// liveCommandLine is commandLine, read again (for up to a second) while
// it reads empty for a process that runs: the kernel answers an empty
// command line while it cannot reach the process's memory.
func liveCommandLine(pid int) string {
	line := commandLine(pid)
	for tries := 0; line == "" && running(pid) && tries < 50; tries++ {
		time.Sleep(20 * time.Millisecond)
		line = commandLine(pid)
	}
	return line
}
