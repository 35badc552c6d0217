package stage

import (
	"go/build"
	"slices"
	"testing"
)

// The stage's init runs once every package it depends on has run its
// own: what it imports decides how soon a sandbox starts (an import of
// path/filepath or golang.org/x/sys/unix put it after most of a large
// program's initialisation, 1.2 ms later in the agenthost binary). The
// standard library packages here are initialised first in any program.
func TestStageImportsLittle(t *testing.T) {
	allowed := []string{
		"encoding/binary", "errors", "fmt", "io", "math", "os", "os/signal",
		"strconv", "strings", "sync", "syscall", "time", "unsafe",
	}
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if !slices.Contains(allowed, imp) {
			t.Errorf("package stage imports %s: its init, and so every sandbox's start, waits for it", imp)
		}
	}
}
