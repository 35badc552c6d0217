package host

import "context"

// NewDefaultToolRegistry returns a registry holding every tool served by
// the plugin binaries in pluginsDir, with opt-in tools disabled. It is the
// registry an agent starts with. opts may be nil. The tools of
// opts.MCPServers are registered after the plugins' (see LoadMCPServers).
//
// Plugins that cannot be loaded are skipped (see LoadPlugins); the error
// is for a plugins directory that cannot be read. The caller must Close
// the registry to stop the plugin processes.
func NewDefaultToolRegistry(ctx context.Context, pluginsDir string, opts *Options) (*ToolRegistry, error) {
	r := NewToolRegistry(opts)
	if _, err := r.LoadPlugins(ctx, pluginsDir); err != nil {
		return nil, err
	}
	if opts != nil {
		r.LoadMCPServers(ctx, opts.MCPServers)
	}
	return r, nil
}
