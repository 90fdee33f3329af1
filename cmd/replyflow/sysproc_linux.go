package main

import "syscall"

// childProcAttr puts a child in its own process group and has the kernel
// stop it if replyflow dies, so no orphan server keeps the ports.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
