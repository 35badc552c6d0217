//go:build !linux

package main

import (
	"os"
	"testing"
)

// unprivileged runs f, which needs a caller that is not root: root reads
// every directory, and here the test cannot take that away.
func unprivileged(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	f()
}
