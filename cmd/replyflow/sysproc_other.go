//go:build !linux && !windows

package main

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// childProcAttr puts a child in its own process group. Without Linux's
// parent-death signal a server can outlive a replyflow that was killed;
// the next `replyflow dev` stops it (see lockDevDir).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// commandLine is the command line of a running process, "" when there is
// none.
func commandLine(pid int) string {
	out, err := exec.Command("ps", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	out, err := exec.Command("ps", "-o", "state=", "-p", strconv.Itoa(pid)).Output()
	state := strings.TrimSpace(string(out))
	return err == nil && state != "" && !strings.HasPrefix(state, "Z")
}
