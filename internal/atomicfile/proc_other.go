//go:build unix && !linux

package atomicfile

import "syscall"

func bootID() string       { return unknownBoot }
func startTime(int) uint64 { return 0 }

// running reports whether a process of that id runs: without /proc its
// start time cannot be checked.
func running(pid int, _ uint64) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
