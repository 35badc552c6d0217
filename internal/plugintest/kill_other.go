//go:build !linux

package plugintest

import (
	"syscall"
	"testing"
)

// KillAtEnd kills the process pid when the test ends, if it still runs.
// Without pidfds, a pid that ended and was taken by another process may
// be signalled instead.
func KillAtEnd(t testing.TB, pid int) {
	t.Helper()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}
