// Package lifecycle runs the instances of one tool source: one launch at a
// time, shared by every caller that waits for it; backoff between
// launches and a breaker after repeated crashes; a stop after an idle
// timeout; a probe of an instance that did not answer in time; and a
// close that waits, bounded, for all of it. It knows nothing of plugins
// or MCP: it takes a function that launches an instance and hands back
// what it launched (host's plugins, attached plugins and MCP servers).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

const (
	// HangGrace is how long after a call's deadline an instance has to
	// answer a probe before it counts as hung and is killed.
	HangGrace = time.Second

	// A source that crashes maxCrashes times within crashWindow is
	// disabled until Reset, or a new host. Between launches it waits 0,
	// backoffBase, 2×backoffBase, … up to backoffMax.
	maxCrashes  = 5
	crashWindow = time.Minute
	backoffBase = 100 * time.Millisecond
	backoffMax  = 5 * time.Second
)

// ErrShuttingDown is the answer of a source that is closed, or closing.
var ErrShuttingDown = errors.New("the host is shutting down")

// DisabledError is the answer of a source disabled after repeated
// crashes.
type DisabledError struct {
	Name, Last string
}

func (e *DisabledError) Error() string {
	return fmt.Sprintf("%s disabled after repeated crashes (last: %s)", e.Name, e.Last)
}

// Instance is one running instance of a source.
type Instance interface {
	// Lifecycle is the instance's bookkeeping, which the Source keeps.
	Lifecycle() *State
	// Dead reports whether the instance has ended.
	Dead() bool
	// Ping checks that the instance still answers.
	Ping(ctx context.Context) error
	// Stop ends the instance; force: at once (it crashed or hung).
	Stop(force bool)
	// ExitReason is " (how it ended)", or "".
	ExitReason() string
	// Stopping reports whether the instance is being stopped.
	Stopping() bool
}

// State is what the Source keeps of one instance. Its zero value is ready.
type State struct {
	inflight atomic.Int64 // calls using the instance; counted up under Source.mu
	lastUse  atomic.Int64 // unix nanoseconds when the last call ended
	idle     *time.Timer  // nil without an idle timeout
	probing  atomic.Bool  // a hang probe is under way
	dropped  bool         // no longer the source's instance; under Source.mu
}

// InFlight is the number of calls using the instance.
func (s *State) InFlight() int64 { return s.inflight.Load() }

// Config says how a Source launches, names and logs its instances.
type Config[I Instance] struct {
	// Launch starts a new instance.
	Launch func() (I, error)
	// Label names the source in errors: "plugin NAME".
	Label func() string
	// Logger logs what happens to the instances.
	Logger hclog.Logger
	// IdleTimeout stops an instance after that long without calls; 0:
	// never.
	IdleTimeout time.Duration
	// Stale, if set, reports an instance that must be replaced before
	// its next call (its sandbox no longer fits); called under the
	// source's lock.
	Stale func(I) bool
	// LaunchWait bounds Close's wait for a launch under way; CloseWait,
	// its wait for the goroutines the source started.
	LaunchWait, CloseWait time.Duration
}

// Source runs the instances of one tool source. Its methods are safe for
// concurrent use.
type Source[I Instance] struct {
	cfg Config[I]
	bg  Background

	mu        sync.Mutex
	inst      I
	has       bool          // inst is set
	start     *attempt[I]   // the launch under way, if any
	crashes   []time.Time   // within crashWindow
	lastCrash string        // why the last crash happened
	disabled  bool          // after maxCrashes within crashWindow
	closed    bool          // Close was called
	closing   chan struct{} // closed by Close
}

// attempt is one launch, shared by every caller waiting for it.
type attempt[I Instance] struct {
	done chan struct{} // closed when inst or err is set
	inst I
	err  error
}

// New returns a source that launches nothing until its first Get.
func New[I Instance](cfg Config[I]) *Source[I] {
	return &Source[I]{cfg: cfg, closing: make(chan struct{})}
}

// Go runs f on a goroutine that Close waits for.
func (s *Source[I]) Go(f func()) { s.bg.Go(f) }

// Get returns the running instance, launching one if there is none or
// the last one died, and counts the caller in its calls: the caller must
// Release it. Callers arriving while a launch is under way (or waiting
// out its backoff) share it.
func (s *Source[I]) Get(ctx context.Context) (I, error) {
	var none I
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return none, ErrShuttingDown
		}
		if s.has && s.cfg.Stale != nil && s.cfg.Stale(s.inst) {
			s.dropLocked(s.inst, "")
			continue
		}
		if s.has {
			inst := s.inst
			if !inst.Dead() {
				inst.Lifecycle().inflight.Add(1)
				s.mu.Unlock()
				return inst, nil
			}
			s.cfg.Logger.Warn("plugin exited; starting it again")
			s.dropLocked(inst, "exited"+inst.ExitReason())
		}
		if s.disabled {
			err := &DisabledError{Name: s.cfg.Label(), Last: s.lastCrash}
			s.mu.Unlock()
			return none, err
		}
		st := s.start
		if st == nil {
			st = &attempt[I]{done: make(chan struct{})}
			s.start = st
			backoff := s.backoffLocked()
			s.bg.Go(func() { s.restart(st, backoff) })
		}
		s.mu.Unlock()
		select {
		case <-st.done:
		case <-ctx.Done():
			return none, ctx.Err()
		}
		if st.err != nil {
			return none, st.err
		}
		s.mu.Lock()
	}
}

// Release ends a call's use of inst; the last call out starts the idle
// clock.
func (s *Source[I]) Release(inst I) {
	st := inst.Lifecycle()
	st.lastUse.Store(time.Now().UnixNano())
	if st.inflight.Add(-1) == 0 && st.idle != nil {
		st.idle.Reset(s.cfg.IdleTimeout)
	}
}

// Current returns the running instance, if there is one, without
// counting a call.
func (s *Source[I]) Current() (I, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inst, s.has
}

// Replace drops the running instance, without counting a crash, if
// stale says it must go: the next call starts another.
func (s *Source[I]) Replace(stale func(I) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has && stale(s.inst) {
		s.dropLocked(s.inst, "")
	}
}

// restart launches a new instance after delay and hands it to the
// callers waiting on st.
func (s *Source[I]) restart(st *attempt[I], delay time.Duration) {
	if delay > 0 {
		s.cfg.Logger.Debug("waiting before starting the plugin again", "backoff", delay)
		select {
		case <-time.After(delay):
		case <-s.closing:
		}
	}
	var inst I
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	err := ErrShuttingDown
	if !closed {
		inst, err = s.cfg.Launch()
	}

	s.mu.Lock()
	s.start = nil
	switch {
	case err == nil && s.closed:
		s.mu.Unlock()
		inst.Stop(false)
		var none I
		inst, err = none, ErrShuttingDown
		s.mu.Lock()
	case err == nil:
		s.inst, s.has = inst, true
		if s.cfg.IdleTimeout > 0 {
			ls := inst.Lifecycle()
			ls.lastUse.Store(time.Now().UnixNano())
			ls.idle = time.AfterFunc(s.cfg.IdleTimeout, func() { s.idleCheck(inst) })
		}
	case !errors.Is(err, ErrShuttingDown):
		s.crashedLocked("could not be started: " + err.Error())
	}
	st.inst, st.err = inst, err
	close(st.done)
	s.mu.Unlock()
}

// backoffLocked is the wait before the next launch: none after the first
// crash, then doubling.
func (s *Source[I]) backoffLocked() time.Duration {
	n := len(s.crashes)
	if n <= 1 {
		return 0
	}
	return min(backoffBase<<(n-2), backoffMax)
}

// crashedLocked counts a crash, and disables the source when there have
// been too many.
func (s *Source[I]) crashedLocked(reason string) {
	now := time.Now()
	kept := s.crashes[:0]
	for _, t := range s.crashes {
		if now.Sub(t) < crashWindow {
			kept = append(kept, t)
		}
	}
	s.crashes = append(kept, now)
	s.lastCrash = reason
	if len(s.crashes) >= maxCrashes && !s.disabled {
		s.disabled = true
		s.cfg.Logger.Error("plugin disabled after repeated crashes; re-enable one of its tools or restart the host",
			"crashes", len(s.crashes), "within", crashWindow, "last", reason)
	}
}

// Reset forgets the source's crashes and re-enables it.
func (s *Source[I]) Reset() {
	s.mu.Lock()
	s.crashes = nil
	s.lastCrash = ""
	s.disabled = false
	s.mu.Unlock()
}

// dropLocked forgets inst, counting a crash when reason is not empty, and
// stops it in the background.
func (s *Source[I]) dropLocked(inst I, reason string) {
	ls := inst.Lifecycle()
	if ls.dropped {
		return
	}
	ls.dropped = true
	if s.has && s.inst.Lifecycle() == ls {
		var none I
		s.inst, s.has = none, false
	}
	if reason != "" {
		s.crashedLocked(reason)
	}
	s.bg.Go(func() { stop(inst, reason != "") })
}

// stop ends inst's idle clock, and inst.
func stop[I Instance](inst I, force bool) {
	if t := inst.Lifecycle().idle; t != nil {
		t.Stop()
	}
	inst.Stop(force)
}

// Drop forgets inst, counting a crash when reason is not empty, and stops
// it in the background: the next call starts another.
func (s *Source[I]) Drop(inst I, reason string) {
	s.mu.Lock()
	s.dropLocked(inst, reason)
	s.mu.Unlock()
}

// idleCheck stops inst if no call has used it for the idle timeout.
func (s *Source[I]) idleCheck(inst I) {
	s.mu.Lock()
	ls := inst.Lifecycle()
	if !s.has || s.inst.Lifecycle() != ls || ls.dropped || ls.inflight.Load() > 0 {
		s.mu.Unlock()
		return
	}
	if left := s.cfg.IdleTimeout - time.Since(time.Unix(0, ls.lastUse.Load())); left > 0 {
		ls.idle.Reset(left)
		s.mu.Unlock()
		return
	}
	s.cfg.Logger.Debug("plugin idle; stopping it", "idle", s.cfg.IdleTimeout)
	s.dropLocked(inst, "")
	s.mu.Unlock()
}

// Probe checks, after a call to inst ended at its deadline (deadline) or
// was canceled, that the instance still answers. One that does not answer
// within HangGrace is hung: it is killed, and the next call starts a new
// one. A tool that merely ignores its deadline leaves the instance
// answering, and it is left alone. An instance stopped meanwhile (the
// host closing, after a canceled command) is no hang.
func (s *Source[I]) Probe(inst I, deadline bool) {
	ls := inst.Lifecycle()
	if !ls.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ls.probing.Store(false)
		ctx, cancel := s.Bounded(HangGrace)
		defer cancel()
		err := inst.Ping(ctx)
		if err == nil || inst.Dead() || s.stopped(inst) {
			return
		}
		after := "after a call was canceled"
		if deadline {
			after = "after a call's deadline"
		}
		s.cfg.Logger.Warn("plugin did not answer "+after+"; killing it", "grace", HangGrace, "error", err)
		// Dropped first, so that no new call picks it up, then killed
		// (Stop with force kills it at once).
		s.Drop(inst, fmt.Sprintf("stopped answering (no answer within %s %s)", HangGrace, after))
	}()
}

// Bounded returns a context that ends after d, or when the source is
// closed.
func (s *Source[I]) Bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Closed reports whether Close was called.
func (s *Source[I]) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// stopped reports whether inst is no longer in use: the source was
// closed, or inst dropped (idle, replaced) or being stopped.
func (s *Source[I]) stopped(inst I) bool {
	s.mu.Lock()
	closed, dropped := s.closed, inst.Lifecycle().dropped
	s.mu.Unlock()
	return closed || dropped || inst.Stopping()
}

// Close stops the running instance, if any, and refuses new ones. A
// launch under way is waited for, within LaunchWait, and stopped; then
// what the source started in the background (an instance dropped
// before, the logging of its output), again within CloseWait: nothing of
// the source runs once Close returned. It reports false when something
// was left running.
func (s *Source[I]) Close() bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return true
	}
	inst, has := s.inst, s.has
	var none I
	s.inst, s.has = none, false
	s.closed = true
	close(s.closing)
	st := s.start
	if has {
		inst.Lifecycle().dropped = true
	}
	s.mu.Unlock()
	if st != nil {
		select {
		case <-st.done:
		case <-time.After(s.cfg.LaunchWait):
		}
	}
	if has {
		stop(inst, false)
	}
	return s.bg.wait(s.cfg.CloseWait)
}
