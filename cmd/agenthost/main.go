// Command agenthost lists, describes and calls the tools that plugin
// binaries serve.
//
// Usage:
//
//	agenthost [flags] COMMAND [ARGS]
//
// Run agenthost --help for the commands and flags.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agenthost/agenthost/host/config"
)

func main() {
	closeInheritedOnExec()
	beforeStdioServe = oneProcessor
	ctx, stop := signalContext()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is a command line that cannot be run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errToolFailed: the tool ran and its result is a failure: exit status 1,
// and the failure has been printed already.
var errToolFailed = errors.New("the tool call failed")

// exitCode prints err, unless it has been printed already, and returns the
// process's exit status.
func exitCode(err error, stderr io.Writer) int {
	var usage *usageError
	var cfgErr *config.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "agenthost: %s (see agenthost --help)\n", usage.msg)
		return 2
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "agenthost: %v\n", cfgErr)
		return 2
	case errors.Is(err, errToolFailed):
		return 1
	default:
		fmt.Fprintf(stderr, "agenthost: %v\n", err)
		return 1
	}
}
