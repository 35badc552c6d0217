package plugintest

import (
	"testing"

	"golang.org/x/sys/unix"
)

// KillAtEnd kills the process pid when the test ends, if it still runs.
// It holds the process by a pidfd opened now, so that a process that
// ended meanwhile is never mistaken for another that took its pid: with
// the tests of many packages starting processes side by side, a pid is
// soon reused, and a kill by number at the end of a test could hit a
// process of another test.
func KillAtEnd(t testing.TB, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	})
}
