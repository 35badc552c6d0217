package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/host"
)

// isPluginsLock says whether the plugins command's arguments ask for
// "plugins lock", which runs without the registry: it only hashes files.
func isPluginsLock(args []string) bool {
	return len(args) > 0 && args[0] == "lock"
}

// pluginsLock writes the lock file: the SHA-256 of every plugin binary in
// the plugins directory, none of which is started. It prints each entry
// as the file has it.
func pluginsLock(env *env, args []string) error {
	// The flags may follow "lock" too, as in "plugins lock --lock FILE".
	dir, lockFile := env.pluginsDir, env.lockFile
	fs := flag.NewFlagSet("agenthost plugins lock", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&lockFile, "lock", lockFile, "the lock `FILE`")
	fs.StringVar(&dir, "plugins", dir, "the plugins `DIR`ectory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(env.stdout, "Usage:\n  agenthost plugins lock [--lock FILE]\n\nWrites the SHA-256 of every plugin binary to the lock file\n(default agenthost.lock in the plugins directory). No plugin is started.")
			return nil
		}
		return usagef("plugins lock: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("plugins lock takes no arguments (the lock file is --lock FILE)")
	}
	entries, err := host.WriteLockFile(dir, lockFile)
	if err != nil {
		return err
	}
	path := host.LockFilePath(dir, lockFile)
	for _, e := range entries {
		fmt.Fprintf(env.stdout, "sha256:%s  %s\n", e.SHA256, e.Name)
	}
	switch len(entries) {
	case 0:
		fmt.Fprintf(env.stdout, "wrote %s: no plugin binaries found, so no plugin may run while it exists\n", path)
	case 1:
		fmt.Fprintf(env.stdout, "wrote %s: 1 plugin binary\n", path)
	default:
		fmt.Fprintf(env.stdout, "wrote %s: %d plugin binaries\n", path, len(entries))
	}
	return nil
}
