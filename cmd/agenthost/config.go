package main

import (
	"errors"
	"flag"
	"maps"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// loadConfig reads the configuration: the file --config names (it must
// exist; "-" reads none), else the user file and the project file
// (config.Load).
func loadConfig(file string, given bool) (*config.File, error) {
	switch {
	case file == "-":
		return config.New(), nil
	case given && file == "":
		return nil, usagef("--config needs a FILE (- for none)")
	case given:
		c, err := config.ReadFile(file)
		var ce *config.Error
		if err != nil && !errors.As(err, &ce) {
			return nil, usagef("--config: %v", err)
		}
		return c, err
	}
	return config.Load()
}

// apply sets each flag the command line did not give to the
// configuration's value; --plugin-env and --grant add to the file's. The
// chat block applies to the chat command only. The enable and disable
// lists are left to toggleTools.
func applyConfig(c *config.File, fs *flag.FlagSet, given map[string]bool, command string) error {
	set := func(s config.Setting, name string) error {
		for _, v := range s.Values {
			if err := fs.Set(name, v); err != nil {
				return s.Errorf("%v", err)
			}
		}
		return nil
	}
	for name, s := range c.Flags {
		if name == "enable" || name == "disable" || given[name] && name != "plugin-env" {
			continue
		}
		if err := set(s, name); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Grants)) {
		if err := set(c.Grants[name], "grant"); err != nil {
			return err
		}
	}
	if command != "chat" {
		return nil
	}
	for name, s := range c.Chat {
		if !given[name] {
			if err := set(s, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// toggleTools applies the configuration's enable and disable lists, then
// the flags', so that a flag wins over the file (see applyToggles).
func toggleTools(c *config.File, enable, disable []string, reg *host.ToolRegistry) error {
	var file, flags []toggle
	for _, list := range []struct {
		flag   string
		enable bool
		names  []string
	}{{"enable", true, enable}, {"disable", false, disable}} {
		s := c.Flags[list.flag]
		for _, name := range s.Values {
			file = append(file, toggle{name, list.enable, func(err error) error {
				return s.Errorf("%s: %v", textsafe.Name(name), err)
			}})
		}
		for _, name := range list.names {
			flags = append(flags, toggle{name, list.enable, func(err error) error {
				return usagef("--%s %s: %v", list.flag, name, err)
			}})
		}
	}
	if err := applyToggles(file, reg); err != nil {
		return err
	}
	return applyToggles(flags, reg)
}

// toggle is a name or a pattern an enable or disable list holds, and how
// its error is told.
type toggle struct {
	name   string
	enable bool
	fail   func(error) error
}

// applyToggles enables and disables the tools each toggle names, the
// more specific last, so that it wins: mcp:SERVER, then a glob, then
// mcp:SERVER/GLOB, then a tool's name; on a tie, disable wins. So
// --disable mcp:github --enable mcp:github/list_issues leaves one tool of
// the server, and an enable list and a disable list say the same
// whatever their order.
func applyToggles(ts []toggle, reg *host.ToolRegistry) error {
	slices.SortStableFunc(ts, func(a, b toggle) int {
		if d := specificity(a.name) - specificity(b.name); d != 0 {
			return d
		}
		switch {
		case a.enable == b.enable:
			return 0
		case a.enable:
			return -1
		}
		return 1
	})
	for _, t := range ts {
		toggle := reg.Disable
		if t.enable {
			toggle = reg.Enable
		}
		if err := toggle(t.name); err != nil {
			return t.fail(err)
		}
	}
	return nil
}

// specificity ranks what an enable or disable names, the narrowest
// highest.
func specificity(name string) int {
	wild := func(s string) bool { return strings.ContainsAny(s, "*?") }
	if source, ok := strings.CutPrefix(name, host.MCPSourcePrefix); ok {
		_, glob, hasGlob := strings.Cut(source, "/")
		switch {
		case !hasGlob:
			return 0
		case wild(glob):
			return 2
		}
		return 3
	}
	if wild(name) {
		return 1
	}
	return 3
}
