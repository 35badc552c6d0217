package lifecycle

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/poll"
)

// fake is an instance that lives in the test: it dies, hangs or stops
// when the test says.
type fake struct {
	State
	id      int
	dead    atomic.Bool
	hung    atomic.Bool
	stopped atomic.Bool
	forced  atomic.Bool
}

func (f *fake) Lifecycle() *State { return &f.State }
func (f *fake) Dead() bool        { return f.dead.Load() }
func (f *fake) ExitReason() string {
	if f.dead.Load() {
		return " (killed)"
	}
	return ""
}
func (f *fake) Stopping() bool { return f.stopped.Load() }
func (f *fake) Stop(force bool) {
	f.forced.Store(force)
	f.stopped.Store(true)
}

func (f *fake) Ping(ctx context.Context) error {
	if f.hung.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// launcher launches fakes, failing while fail is set, and counts them.
type launcher struct {
	mu       sync.Mutex
	launched []*fake
	fail     error
	gate     chan struct{} // if set, each launch waits for it
}

func (l *launcher) launch() (*fake, error) {
	if l.gate != nil {
		<-l.gate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return nil, l.fail
	}
	f := &fake{id: len(l.launched) + 1}
	l.launched = append(l.launched, f)
	return f, nil
}

func (l *launcher) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.launched)
}

func newSource(l *launcher, idle time.Duration) *Source[*fake] {
	return New(Config[*fake]{
		Launch: l.launch, Label: func() string { return "plugin test" },
		Logger: hclog.NewNullLogger(), IdleTimeout: idle,
		LaunchWait: time.Second, CloseWait: time.Second,
	})
}

// Callers that arrive while a launch is under way share it.
func TestOneLaunchForWaitingCallers(t *testing.T) {
	t.Parallel()
	l := &launcher{gate: make(chan struct{})}
	s := newSource(l, 0)
	defer s.Close()
	var wg sync.WaitGroup
	got := make([]*fake, 8)
	for i := range got {
		wg.Go(func() {
			inst, err := s.Get(t.Context())
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = inst
			s.Release(inst)
		})
	}
	close(l.gate)
	wg.Wait()
	if n := l.count(); n != 1 {
		t.Fatalf("%d launches for 8 waiting callers, want 1", n)
	}
	for _, inst := range got {
		if inst != got[0] {
			t.Fatal("callers got different instances")
		}
	}
}

// A dead instance is replaced on the next call, and counted as a crash;
// after five crashes the source is disabled until Reset.
func TestCrashesDisableUntilReset(t *testing.T) {
	t.Parallel()
	l := &launcher{}
	s := newSource(l, 0)
	defer s.Close()
	for i := range 5 {
		inst, err := s.Get(t.Context())
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		s.Release(inst)
		inst.dead.Store(true)
	}
	_, err := s.Get(t.Context())
	var off *DisabledError
	if !errors.As(err, &off) || err.Error() != "plugin test disabled after repeated crashes (last: exited (killed))" {
		t.Fatalf("after five crashes: %v", err)
	}
	s.Reset()
	inst, err := s.Get(t.Context())
	if err != nil {
		t.Fatalf("after Reset: %v", err)
	}
	s.Release(inst)
	if n := l.count(); n != 6 {
		t.Errorf("%d launches, want 6", n)
	}
}

// A launch that fails is a crash too, and its error is the callers'.
func TestFailedLaunch(t *testing.T) {
	t.Parallel()
	l := &launcher{fail: errors.New("no such file")}
	s := newSource(l, 0)
	defer s.Close()
	if _, err := s.Get(t.Context()); err == nil || err.Error() != "no such file" {
		t.Fatalf("Get = %v", err)
	}
	l.mu.Lock()
	l.fail = nil
	l.mu.Unlock()
	inst, err := s.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.Release(inst)
}

// An instance without calls for the idle timeout is stopped, not as a
// crash; the next call starts another.
func TestIdleStop(t *testing.T) {
	t.Parallel()
	l := &launcher{}
	s := newSource(l, 20*time.Millisecond)
	defer s.Close()
	inst, err := s.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.Release(inst)
	poll.Eventually(t, 5*time.Second, "the idle instance is stopped", poll.Holds(inst.stopped.Load))
	if inst.forced.Load() {
		t.Error("an idle instance was stopped as a crash")
	}
	next, err := s.Get(t.Context())
	if err != nil || next == inst {
		t.Fatalf("after the idle stop: %v, same instance %v", err, next == inst)
	}
	s.Release(next)
}

// A hung instance, probed after a call's deadline, is dropped and
// stopped at once; one that answers is left alone.
func TestProbe(t *testing.T) {
	t.Parallel()
	l := &launcher{}
	s := newSource(l, 0)
	defer s.Close()
	inst, err := s.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.Release(inst)
	s.Probe(inst, true)
	poll.Eventually(t, 5*time.Second, "the probe of an answering instance ends", func() error {
		if inst.probing.Load() {
			return errors.New("probing")
		}
		return nil
	})
	if inst.stopped.Load() {
		t.Fatal("an instance that answers was stopped")
	}
	inst.hung.Store(true)
	s.Probe(inst, true)
	poll.Eventually(t, 5*time.Second, "the hung instance is stopped", poll.Holds(inst.stopped.Load))
	if !inst.forced.Load() {
		t.Error("a hung instance was not stopped at once")
	}
	if cur, ok := s.Current(); ok && cur == inst {
		t.Error("the hung instance is still the source's")
	}
}

// Close stops the instance, waits for what the source started, and
// refuses calls from then on.
func TestClose(t *testing.T) {
	t.Parallel()
	l := &launcher{}
	s := newSource(l, 0)
	inst, err := s.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.Release(inst)
	ran := make(chan struct{})
	s.Go(func() { <-ran })
	go close(ran)
	if !s.Close() {
		t.Error("Close reports work left running")
	}
	if !inst.stopped.Load() {
		t.Error("Close left the instance running")
	}
	if _, err := s.Get(t.Context()); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Get after Close = %v", err)
	}
	if !s.Closed() {
		t.Error("Closed is false after Close")
	}
}

// A stale instance is replaced before its next call, without a crash.
func TestStaleAndReplace(t *testing.T) {
	t.Parallel()
	l := &launcher{}
	var stale atomic.Bool
	s := New(Config[*fake]{
		Launch: l.launch, Label: func() string { return "plugin test" }, Logger: hclog.NewNullLogger(),
		Stale:      func(f *fake) bool { return stale.Load() && f.id == 1 },
		LaunchWait: time.Second, CloseWait: time.Second,
	})
	defer s.Close()
	first, _ := s.Get(t.Context())
	s.Release(first)
	stale.Store(true)
	second, _ := s.Get(t.Context())
	stale.Store(false)
	s.Release(second)
	if first == second || first.forced.Load() {
		t.Fatalf("a stale instance was kept, or stopped as a crash")
	}
	s.Replace(func(f *fake) bool { return f == second })
	third, _ := s.Get(t.Context())
	s.Release(third)
	if third == second {
		t.Fatal("Replace kept the instance")
	}
	if n := l.count(); n != 3 {
		t.Errorf("%d launches, want 3", n)
	}
	if got := (&DisabledError{Name: "x", Last: "y"}).Error(); !strings.Contains(got, "x disabled") {
		t.Error(got)
	}
}
