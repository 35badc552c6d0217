package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/internal/buildinfo"
)

// versionFlag adds --version to the top-level flags: it is checked right
// after they are parsed, before a command is looked up or any plugin
// starts, so `agenthost --version` costs only the process start.
func versionFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and exit")
}

// printVersion prints "agenthost VERSION".
func printVersion(w io.Writer) error {
	_, err := fmt.Fprintf(w, "agenthost %s\n", buildinfo.Version())
	return err
}
