package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// trustCommand records the user's trust in a project's configuration
// files (config.Trust): until then, agenthost refuses to use them.
// Without a FILE, it trusts those of the working directory that exist
// (agenthost.json, .mcp.json).
func trustCommand() *command {
	return &command{
		approval:   policy.ModeAuto,
		usage:      "agenthost trust [FILE]",
		noRegistry: func([]string) bool { return true },
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 1 {
				return usagef("trust takes at most one file (default %s)", strings.Join(config.ProjectFiles(), " and "))
			}
			files := args
			if len(files) == 0 {
				for _, f := range config.ProjectFiles() {
					if _, err := os.Lstat(f); err == nil {
						files = append(files, f)
					}
				}
			}
			if len(files) == 0 {
				return fmt.Errorf("trust: no %s in this directory", strings.Join(config.ProjectFiles(), " or "))
			}
			for _, file := range files {
				abs, pins, err := config.Trust(file)
				var ce *config.Error
				if errors.As(err, &ce) {
					// A file that would be refused anyway is not recorded.
					return err
				}
				if err != nil {
					return fmt.Errorf("trust: %w", err)
				}
				fmt.Fprintf(env.stdout, "trusted %s as it is now", textsafe.Name(abs))
				if pins > 0 {
					fmt.Fprintf(env.stdout, ", with the %d files of the project it runs or reads", pins)
				}
				fmt.Fprintf(env.stdout, "; after a change to any, run agenthost trust again\n")
			}
			return nil
		},
	}
}
