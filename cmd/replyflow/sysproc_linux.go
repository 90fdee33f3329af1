package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// childProcAttr puts a child in its own process group (Ctrl-C reaches
// replyflow first, which stops the server last) and has the kernel kill it
// at once if replyflow dies: a server shutting down on its own for
// seconds would hold the ports and the database the next run needs.
// SQLite recovers a killed server's database when it is next opened.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// commandLine is the command line of a running process, "" when there is
// none (or it has exited and not yet been reaped).
func commandLine(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(string(data), "\x00", " ")
}

// running reports whether pid is a process that has not exited (a zombie,
// exited and not yet reaped, has). It reads the process's state, which
// the kernel always answers, where a live process's command line can read
// empty while the kernel cannot reach the process's memory.
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')', as comm may hold one.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	state := data[i+2]
	return state != 'Z' && state != 'X'
}
