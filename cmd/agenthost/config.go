package main

import (
	"errors"
	"flag"
	"maps"
	"slices"

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

// toggleTools applies the configuration's enable and disable lists, before
// the flags', so that a flag wins over the file.
func toggleTools(c *config.File, reg *host.ToolRegistry) error {
	for _, t := range []struct {
		flag   string
		toggle func(string) error
	}{{"enable", reg.Enable}, {"disable", reg.Disable}} {
		s := c.Flags[t.flag]
		for _, name := range s.Values {
			if err := t.toggle(name); err != nil {
				return s.Errorf("%s: %v", textsafe.Name(name), err)
			}
		}
	}
	return nil
}
