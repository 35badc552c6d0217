package main

import (
	"fmt"
	"strings"
	"syscall"
)

// A command runs under the limits of the bash plugin's sandbox, which it
// inherits (see host.Limits): the memory each process may hold, the
// processes of the sandbox, the size of a file. A command that runs into
// one fails in its own words, or dies of SIGXFSZ; run_bash adds a notice
// that names the limit, so that the model knows a retry will not help
// and the user what to grant.

// limit is one of the sandbox's limits and how a command shows it hit
// it.
type limit struct {
	resource int
	what     string // "the memory limit"
	unit     func(uint64) string
	grant    string   // the grant item that raises it
	words    []string // in stderr, said by a program that ran into it
	status   int      // the exit status of a shell whose command it killed; 0: none
}

var limits = []limit{
	{
		resource: syscall.RLIMIT_FSIZE, what: "the file size limit", unit: bytesText, grant: "file-size:SIZE",
		words:  []string{"File size limit exceeded"},
		status: 128 + int(syscall.SIGXFSZ),
	},
	{
		resource: syscall.RLIMIT_DATA, what: "the memory limit", unit: func(v uint64) string { return bytesText(v) + " a process" }, grant: "memory:SIZE",
		words: []string{"out of memory", "Cannot allocate memory", "cannot allocate memory", "MemoryError", "bad_alloc", "heap out of memory", "memory exhausted"},
	},
	{
		resource: 6 /* RLIMIT_NPROC */, what: "the process limit", unit: func(v uint64) string { return fmt.Sprint(v) + " processes and threads" }, grant: "processes:N",
		words: []string{"fork: Resource temporarily unavailable", "fork: retry", "Resource temporarily unavailable (os error 11)", "can't start new thread", "pthread_create failed"},
	},
}

// limitNotice is the notice for a command that failed with exit code
// and stderr, when they show it ran into a limit in force; "" when not.
func limitNotice(exitCode int, stderr string) string {
	if exitCode == 0 {
		return ""
	}
	for _, l := range limits {
		var rl syscall.Rlimit
		if syscall.Getrlimit(l.resource, &rl) != nil || rl.Cur == ^uint64(0) {
			continue
		}
		hit := l.status != 0 && exitCode == l.status
		for _, w := range l.words {
			hit = hit || strings.Contains(stderr, w)
		}
		if hit {
			return fmt.Sprintf("[the command ran into %s of its sandbox, %s: a retry will fail the same way; the user can raise it with --grant bash=%s]", l.what, l.unit(rl.Cur), l.grant)
		}
	}
	return ""
}

// bytesText is n bytes in the largest unit that divides it.
func bytesText(n uint64) string {
	for _, u := range []struct {
		name string
		size uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
