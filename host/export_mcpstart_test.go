package host

// NpxCacheOf is where npx installs what srv runs, under a registry whose
// Options.CacheDir is cacheDir, and whether the host repairs it.
func NpxCacheOf(srv MCPServer, cacheDir string) (string, bool) {
	return srv.npxCache(launcherRoot(cacheDir))
}
