package host

// CallsInFlight is the number of calls that the running process of the
// plugin or MCP server serving tool has been given and not answered: 0
// when no process of it runs. A test waits on it for a call to be under
// way.
func (r *ToolRegistry) CallsInFlight(tool string) int64 {
	r.mu.RLock()
	e := r.entries[tool]
	r.mu.RUnlock()
	if e == nil || e.source == nil {
		return 0
	}
	inst, ok := e.source.life.Current()
	if !ok {
		return 0
	}
	return inst.InFlight()
}
