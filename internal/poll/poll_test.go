package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// failure is a testing.TB whose Fatalf records the message and ends the
// wait (a panic that wait recovers).
type failure struct {
	testing.TB
	msg string
}

func (f *failure) Helper() {}

func (f *failure) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// wait runs Eventually and returns how it failed: "" when it did not.
func wait(t *testing.T, timeout time.Duration, cond func() error) (msg string) {
	f := &failure{TB: t}
	defer func() {
		if p := recover(); p != nil && p != f {
			panic(p)
		}
		msg = f.msg
	}()
	Eventually(f, timeout, "it holds", cond)
	return ""
}

func TestEventually(t *testing.T) {
	t.Parallel()
	calls := 0
	msg := wait(t, 10*time.Second, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if msg != "" || calls != 3 {
		t.Errorf("a condition that holds at the third call: %d calls, failed with %q", calls, msg)
	}
}

func TestEventuallyReportsTheLastSeen(t *testing.T) {
	t.Parallel()
	calls := 0
	msg := wait(t, 50*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("%d calls", calls)
	})
	if want := fmt.Sprintf("timed out after 50ms waiting until it holds: %d calls", calls); msg != want {
		t.Errorf("failed with %q, want %q", msg, want)
	}
}

func TestEventuallyStops(t *testing.T) {
	t.Parallel()
	calls := 0
	msg := wait(t, time.Minute, func() error {
		if calls++; calls < 2 {
			return errors.New("not yet")
		}
		return Stop(errors.New("the process exited"))
	})
	if want := "gave up waiting until it holds: the process exited"; msg != want || calls != 2 {
		t.Errorf("%d calls, failed with %q; want 2, %q", calls, msg, want)
	}
}
