// Package buildinfo says which build of agenthost is running.
package buildinfo

import "runtime/debug"

// Version is the main module's version, or "dev" for a build from a work
// tree.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// VersionOrRevision is Version, or for a build from a work tree
// "dev-REVISION" (the first 12 hex digits of its VCS revision) when the
// build recorded one.
func VersionOrRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}
