//go:build !linux

package main

import "testing"

// mountTmpfs skips: the tests mount a tmpfs on Linux only.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	t.Skip("mounting a tmpfs is done on Linux only")
	return ""
}

// raceDir is a temporary directory.
func raceDir(t *testing.T) string { return t.TempDir() }
