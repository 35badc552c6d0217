package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// A project's configuration file comes with the directory agenthost runs
// in, a cloned repository say, and it can start programs (mcpServers, a
// plugins directory) and widen the sandbox (grants, sandbox off). So it is
// read only once the user has trusted it, as it is now: agenthost trust
// records its SHA-256 under the user's configuration directory, and a
// change to the file needs agenthost trust again. A file the user names
// with --config, and the user's own file, need no trust.

// trustedDir holds one record per trusted project file, named after the
// SHA-256 of its absolute path, holding the SHA-256 of its content.
const trustedDir = "agenthost/trusted"

// trustRecord is where the trust in the project file at abs is recorded.
func trustRecord(abs string) (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, trustedDir, hex.EncodeToString(sum[:16])), nil
}

// trustLine is what the record of the file at abs with content data
// holds.
func trustLine(abs string, data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) + " " + abs + "\n"
}

// projectTrusted reports whether the user trusts the project file at abs
// with the content data.
func projectTrusted(abs string, data []byte) bool {
	rec, err := trustRecord(abs)
	if err != nil {
		return false
	}
	got, err := os.ReadFile(rec)
	return err == nil && string(got) == trustLine(abs, data)
}

// untrustedError is a project file that is not trusted (as it is now).
func untrustedError(file string) error {
	return &configError{file: file, msg: `this directory's configuration is not trusted: it can start programs (mcpServers, plugins) and widen the sandbox. Read it, then run "agenthost trust" (again after each change), or name it with --config to use it once`}
}

func trustCommand() *command {
	return &command{
		usage:      "agenthost trust [FILE]",
		noRegistry: func([]string) bool { return true },
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 1 {
				return usagef("trust takes at most one file (default %s)", projectConfigFile)
			}
			file := projectConfigFile
			if len(args) == 1 {
				file = args[0]
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("trust: %w", err)
			}
			// A file that would be refused anyway is not recorded.
			if _, err := parseConfig(file, data); err != nil {
				return err
			}
			abs, err := filepath.Abs(file)
			if err != nil {
				return err
			}
			rec, err := trustRecord(abs)
			if err != nil {
				return fmt.Errorf("trust: %w", err)
			}
			if err := atomicfile.Write(rec, []byte(trustLine(abs, data)), 0o600); err != nil {
				return fmt.Errorf("trust: %w", err)
			}
			fmt.Fprintf(env.stdout, "trusted %s as it is now; after a change to it, run agenthost trust again\n", textsafe.Name(abs))
			return nil
		},
	}
}
