package host

import (
	"testing"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// PlayLandlockABI makes the host believe, until t ends, that the kernel's
// Landlock is ABI abi (0: none): what it reports, warns of and refuses
// follows. What a sandbox enforces stays the real kernel's, as
// sandbox.Start asks the kernel itself. probeSandbox belongs to the whole
// package, so a test that calls this must not run in parallel with
// others.
func PlayLandlockABI(t testing.TB, abi int) {
	old := probeSandbox
	probeSandbox = func() sandbox.Support { return sandbox.Support{ABI: abi} }
	t.Cleanup(func() { probeSandbox = old })
}

// PlayKernelWithout makes the host believe, until t ends, that the
// kernel has no seccomp (seccomp set) and gives no namespaces
// (namespaces set), for the reasons given: as PlayLandlockABI, what it
// reports, warns of and refuses.
func PlayKernelWithout(t testing.TB, seccomp, namespaces error) {
	oldSeccomp, oldNS, oldKnown := probeSeccomp, probeNamespaces, knownNamespaces
	if seccomp != nil {
		probeSeccomp = func() error { return seccomp }
	}
	if namespaces != nil {
		probeNamespaces = func() error { return namespaces }
		knownNamespaces = probeNamespaces
	}
	t.Cleanup(func() { probeSeccomp, probeNamespaces, knownNamespaces = oldSeccomp, oldNS, oldKnown })
}
