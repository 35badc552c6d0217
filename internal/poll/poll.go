// Package poll is how a test waits for what another goroutine or process
// does: Eventually. It imports nothing of this module, so that the tests
// of every package can use it, internal/sandbox's among them (which
// internal/plugintest imports).
package poll

import (
	"errors"
	"testing"
	"time"
)

// interval is the time between two calls of a condition.
const interval = 10 * time.Millisecond

// Eventually calls cond every 10 ms until it returns nil, and fails the
// test if it has not within timeout. An error cond returns says what it
// saw instead; a timeout reports the last one. An error made with Stop
// fails the test at once: what cond waits for can no longer happen (the
// process that was to do it has exited, say), and waiting out the timeout
// would only delay the failure.
//
// It waits for an event, never for time to pass. Like t.Fatal, it must be
// called from the goroutine running the test.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if stop := (*stopError)(nil); errors.As(err, &stop) {
			t.Fatalf("gave up waiting until %s: %v", what, stop.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s: %v", timeout, what, err)
		}
		time.Sleep(interval)
	}
}

// Stop makes err one that ends Eventually's wait at once, failing the
// test with err.
func Stop(err error) error { return &stopError{err} }

type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// Holds adapts a condition that says only whether it holds: a false is
// "not yet".
func Holds(cond func() bool) func() error {
	return func() error {
		if !cond() {
			return errNotYet
		}
		return nil
	}
}

var errNotYet = errors.New("not yet")
