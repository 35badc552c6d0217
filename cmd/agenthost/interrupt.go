package main

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
)

// Ctrl-C. By default SIGINT, like SIGTERM, cancels the program's context
// and every command winds down; a second Ctrl-C then ends the process at
// once. A command that gives Ctrl-C a meaning of its own claims it: the
// interactive chat stops the answer under way, and ends the session only
// at its prompt.

// interruptRouter hands SIGINT to the latest claim, if any.
type interruptRouter struct {
	mu     sync.Mutex
	claims []chan struct{}
}

// interrupts routes the process's SIGINT (see signalContext).
var interrupts interruptRouter

// claim has SIGINT delivered on the returned channel, rather than
// cancelling the program, until release is called.
func (r *interruptRouter) claim() (ch <-chan struct{}, release func()) {
	c := make(chan struct{}, 1)
	r.mu.Lock()
	r.claims = append(r.claims, c)
	r.mu.Unlock()
	return c, func() {
		r.mu.Lock()
		r.claims = slices.DeleteFunc(r.claims, func(x chan struct{}) bool { return x == c })
		r.mu.Unlock()
	}
}

// deliver hands one SIGINT to the latest claim and reports whether there
// was one. An interrupt not yet taken is not doubled.
func (r *interruptRouter) deliver() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.claims) == 0 {
		return false
	}
	select {
	case r.claims[len(r.claims)-1] <- struct{}{}:
	default:
	}
	return true
}

// signalContext returns the program's context: cancelled by SIGTERM, or by
// a SIGINT that no command has claimed. stop releases the signals.
func signalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			if s == os.Interrupt && interrupts.deliver() {
				continue
			}
			cancel()
			// From now on the default applies: another Ctrl-C ends the
			// process without waiting for the wind-down.
			signal.Stop(sigs)
			return
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}
