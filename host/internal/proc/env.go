package proc

import (
	"os"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// pluginEnvAllowed are the variables of the host's environment that every
// plugin gets: what a program needs to find programs, files, its user,
// language and time zone. LC_* variables are allowed too (see AllowedEnv).
var pluginEnvAllowed = []string{"PATH", "HOME", "USER", "LANG", "TMPDIR", "TZ", "SHELL", "TERM"}

// Env is the environment a plugin starts with: the variables of the
// host's environment on the allow-list (PATH, HOME, USER, LANG, every
// LC_*, TMPDIR, TZ, SHELL, TERM) and those named in passThrough
// (Options.PluginEnv), in the host's order. Nothing else of the host's
// environment — model API keys, cloud credentials, tokens — reaches a
// plugin. go-plugin adds its own variables to these.
func Env(passThrough []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if name == sandbox.Env {
			continue // the host's word alone
		}
		if AllowedEnv(name) || slices.Contains(passThrough, name) {
			env = append(env, kv)
		}
	}
	return env
}

// AllowedEnv reports whether the variable name is on the allow-list.
func AllowedEnv(name string) bool {
	return slices.Contains(pluginEnvAllowed, name) || strings.HasPrefix(name, "LC_")
}
