package main

import "testing"

func TestInterruptRouter(t *testing.T) {
	t.Parallel()
	var r interruptRouter
	if r.deliver() {
		t.Fatal("an interrupt with no claim was taken; it must cancel the program")
	}
	outer, releaseOuter := r.claim()
	inner, releaseInner := r.claim()
	if !r.deliver() || !r.deliver() {
		t.Fatal("a claimed interrupt was not taken")
	}
	select {
	case <-inner:
	default:
		t.Fatal("the latest claim did not get the interrupt")
	}
	select {
	case <-inner:
		t.Error("two interrupts not yet taken were doubled")
	case <-outer:
		t.Error("an older claim got the interrupt")
	default:
	}
	releaseInner()
	if !r.deliver() {
		t.Fatal("the remaining claim did not take the interrupt")
	}
	select {
	case <-outer:
	default:
		t.Error("after the latest claim was released, the older one did not get the interrupt")
	}
	releaseOuter()
	if r.deliver() {
		t.Error("an interrupt was taken after every claim was released")
	}
}
