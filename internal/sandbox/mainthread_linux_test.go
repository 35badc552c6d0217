package sandbox

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGoLockedNeverRunsOnTheMainThread: what goLocked runs, and so every
// thread the sandbox restricts, is never the process's main thread, which
// would put the host in its plugins' domain.
func TestGoLockedNeverRunsOnTheMainThread(t *testing.T) {
	pid := unix.Getpid()
	var wg sync.WaitGroup
	var mu sync.Mutex
	onMain := 0
	for range 500 {
		wg.Add(1)
		goLocked(func() {
			defer wg.Done()
			if unix.Gettid() == pid {
				mu.Lock()
				onMain++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if onMain > 0 {
		t.Errorf("%d of 500 ran on the main thread", onMain)
	}
}
