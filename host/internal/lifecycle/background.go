package lifecycle

import (
	"sync"
	"time"
)

// Background is a set of goroutines that a source's close waits for: an
// instance being stopped, its stderr being logged, its Host stream being
// answered, a restart, a tools/list_changed refresh. Unlike a
// sync.WaitGroup, it may be added to while it is waited for.
type Background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0
}

// Go runs f on a goroutine of its own, counted until f returns.
func (b *Background) Go(f func()) {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	b.mu.Unlock()
	go func() {
		defer b.done()
		f()
	}()
}

func (b *Background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n--; b.n == 0 {
		close(b.idle)
	}
}

// wait waits until no goroutine of b runs, for up to d, and reports
// whether none does.
func (b *Background) wait(d time.Duration) bool {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return true
	}
	idle := b.idle
	b.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}
