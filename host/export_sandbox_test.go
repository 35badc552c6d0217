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
