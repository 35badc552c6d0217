package host

import (
	"path/filepath"
	"slices"
)

// builtinPlugins are the file names of the plugin binaries that ship with
// the host. In a plugins directory, a binary under one of these names is a
// built-in: the built-ins register before every other plugin, so a tool
// name they serve is theirs, and a third-party plugin that declares it is
// refused as a duplicate.
//
// Being a built-in is a matter of the file's name in the plugins
// directory, not of anything the plugin says about itself: whoever can
// put a file under such a name can also replace the built-in itself,
// which is why the plugins directory must be writable by no one but the
// user and root (see Options.AllowInsecurePlugins) and why a lock file
// pins each binary's content.
var builtinPlugins = []string{
	PluginPrefix + "bash",
	PluginPrefix + "fs",
	PluginPrefix + "search",
	PluginPrefix + "session",
}

// isBuiltin reports whether the plugin binary at path is a built-in.
func isBuiltin(path string) bool {
	return slices.Contains(builtinPlugins, filepath.Base(path))
}

// registrationOrder returns paths, sorted by name, with the built-ins
// first: the order in which their tools are registered.
func registrationOrder(paths []string) []string {
	ordered := make([]string, 0, len(paths))
	for _, p := range paths {
		if isBuiltin(p) {
			ordered = append(ordered, p)
		}
	}
	for _, p := range paths {
		if !isBuiltin(p) {
			ordered = append(ordered, p)
		}
	}
	return ordered
}
