package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// trustCommand records the user's trust in a project's configuration
// file (config.Trust): until then, agenthost refuses to use it.
func trustCommand() *command {
	return &command{
		approval:   policy.ModeAuto,
		usage:      "agenthost trust [FILE]",
		noRegistry: func([]string) bool { return true },
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 1 {
				return usagef("trust takes at most one file (default %s)", config.ProjectFile)
			}
			file := config.ProjectFile
			if len(args) == 1 {
				file = args[0]
			}
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
			return nil
		},
	}
}
