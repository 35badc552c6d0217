package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// mcpLoginDetails is what agenthost mcp --help says of login and logout.
const mcpLoginDetails = `OAuth: agenthost mcp login NAME logs in to the remote server NAME of the
configuration's mcpServers (OAuth 2.1 with PKCE): it opens the server's
authorization page with $BROWSER, else the desktop's opener when there is
a display, and prints its URL; it waits for the browser to come back to
127.0.0.1 (--timeout, default 5m; Ctrl-C cancels) and stores the token,
0600, under the user config directory's agenthost/tokens, renewed with
its refresh token as it expires. --no-browser only prints the URL.
agenthost mcp logout NAME removes the token. Other commands never open a
browser: a server that asks for a login fails with a message that says
to run agenthost mcp login NAME.
`

// defaultLoginTimeout bounds the wait for the browser's redirect.
const defaultLoginTimeout = 5 * time.Minute

// isMCPLogin reports whether agenthost mcp's arguments are login or
// logout, which run without the registry.
func isMCPLogin(args []string) bool {
	return len(args) > 0 && (args[0] == "login" || args[0] == "logout")
}

// mcpLogin runs agenthost mcp login NAME or agenthost mcp logout NAME.
func mcpLogin(ctx context.Context, env *env, args []string) error {
	verb := args[0]
	fs := flag.NewFlagSet("agenthost mcp "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := defaultLoginTimeout
	noBrowser := false
	if verb == "login" {
		fs.DurationVar(&timeout, "timeout", defaultLoginTimeout, "wait at most `D` for the browser to come back")
		fs.BoolVar(&noBrowser, "no-browser", false, "print the authorization URL without opening a browser")
	}
	// The name may come before or after the flags.
	var names []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(env.stdout, "Usage:\n  agenthost mcp %s NAME\n\n", verb)
				if verb == "login" {
					fmt.Fprintf(env.stdout, "Flags:\n")
					fs.SetOutput(env.stdout)
					fs.PrintDefaults()
					fmt.Fprintln(env.stdout)
				}
				fmt.Fprint(env.stdout, mcpLoginDetails)
				return nil
			}
			return usagef("mcp %s: %v", verb, err)
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(names) != 1 {
		return usagef("mcp %s takes the name of one server of the configuration's mcpServers", verb)
	}
	srv, err := configuredServer(env, names[0])
	if err != nil {
		return err
	}
	name := textsafe.Name(srv.Name)
	if verb == "logout" {
		removed, file, err := srv.Logout()
		if err != nil {
			return fmt.Errorf("mcp logout: %w", err)
		}
		if !removed {
			fmt.Fprintf(env.stdout, "no OAuth token was stored for %s\n", name)
			return nil
		}
		fmt.Fprintf(env.stdout, "logged out of %s: removed its OAuth token (%s)\n", name, textsafe.Name(file))
		return nil
	}

	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := srv.Login(lctx, func(authURL string) {
		opened := !noBrowser && openBrowser(authURL, env.stderr)
		if opened {
			fmt.Fprintf(env.stderr, "Opened the authorization page of %s in the browser. If it did not open, visit:\n\n  %s\n\n", name, authURL)
		} else {
			fmt.Fprintf(env.stderr, "To log in to %s, open this URL in a browser:\n\n  %s\n\n", name, authURL)
		}
		fmt.Fprintf(env.stderr, "Waiting for the browser to come back (at most %s; Ctrl-C cancels)...\n", timeout)
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return fmt.Errorf("mcp login: canceled; nothing was stored for %s", name)
	case errors.Is(err, context.DeadlineExceeded) && lctx.Err() != nil:
		return fmt.Errorf("mcp login: the browser did not come back within %s; nothing was stored for %s (run it again, with a longer --timeout if need be)", timeout, name)
	default:
		return fmt.Errorf("mcp login: %w", err)
	}
	fmt.Fprintf(env.stdout, "logged in to %s; its OAuth token is stored in %s", name, textsafe.Name(res.File))
	if len(res.Scopes) > 0 {
		fmt.Fprintf(env.stdout, " (scopes: %s)", textsafe.Name(strings.Join(res.Scopes, " ")))
	}
	if res.Renewable {
		fmt.Fprintf(env.stdout, "; it is renewed as it expires")
	} else if !res.Expiry.IsZero() {
		fmt.Fprintf(env.stdout, "; it expires at %s, with no refresh token: log in again then", res.Expiry.Local().Format(time.DateTime))
	}
	fmt.Fprintln(env.stdout)
	return nil
}

// configuredServer is the server NAME of the configuration's mcpServers.
func configuredServer(env *env, name string) (*host.MCPServer, error) {
	var names []string
	if env.config != nil {
		if e, ok := env.config.Servers[name]; ok {
			if e.Disabled {
				return nil, fmt.Errorf("the MCP server %s is disabled in the configuration", textsafe.Name(name))
			}
			return &e.Server, nil
		}
		for n := range env.config.Servers {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, usagef("the configuration names no MCP server (mcpServers)")
	}
	slices.Sort(names)
	return nil, usagef("the configuration names no MCP server %s (it names %s)", textsafe.Name(name), textsafe.Name(strings.Join(names, ", ")))
}

// openBrowser opens authURL with $BROWSER (a list of commands separated
// by colons, tried in turn, in which %s stands for the URL, else it comes
// last), else with the desktop's opener when there is one: open on macOS,
// xdg-open where there is a display. It reports whether a browser was
// started; it does not wait for it.
func openBrowser(authURL string, stderr io.Writer) bool {
	var commands [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		for _, entry := range strings.Split(b, ":") {
			if f := strings.Fields(entry); len(f) > 0 {
				commands = append(commands, f)
			}
		}
	} else if runtime.GOOS == "darwin" {
		commands = append(commands, []string{"open"})
	} else if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		commands = append(commands, []string{"xdg-open"})
	}
	for _, c := range commands {
		args := slices.Clone(c[1:])
		substituted := false
		for i, a := range args {
			if strings.Contains(a, "%s") {
				args[i], substituted = strings.ReplaceAll(a, "%s", authURL), true
			}
		}
		if !substituted {
			args = append(args, authURL)
		}
		cmd := exec.Command(c[0], args...)
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			continue
		}
		go cmd.Wait()
		return true
	}
	return false
}
