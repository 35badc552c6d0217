package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// PluginPrefix starts the file name of every plugin binary.
const PluginPrefix = "agenthost-plugin-"

// PluginReport says what became of one plugin binary at start-up.
type PluginReport struct {
	// Path is the binary's path.
	Path string
	// Name and Version are what the plugin says of itself.
	Name    string
	Version string
	// ProtocolMinor is the protocol minor version the plugin speaks.
	ProtocolMinor uint32
	// Tools are the tools registered from it, in its order.
	Tools []string
	// Refused explains each tool of the plugin that was not registered.
	Refused []string
	// Err says why the plugin was skipped; nil when it loaded.
	Err error
	// Cached says the tools came from the description cache.
	Cached bool
	// Launched says the plugin's process was started at load: its
	// description was not cached, or the registry is eager.
	Launched bool
}

// LoadPlugins registers the tools of every plugin binary in dir — an
// executable regular file whose name starts with "agenthost-plugin-" —
// in the order of the binaries' names.
//
// A plugin's tools come from the description cache (Options.CacheDir)
// when it holds an entry for the very same binary: then no process is
// started, and the plugin starts on the first call of one of its tools.
// Otherwise, or with Options.Eager, the plugins are started in parallel
// and asked for their tools; they keep running, and their descriptions
// are cached.
//
// A binary that fails to start, exits, misses the handshake deadline or
// speaks another protocol version is skipped with a warning in the log
// naming the file and the reason; a tool that cannot be registered (its
// name is taken, say) is refused the same way. Either way the rest load.
// The error is for a directory that cannot be read at all.
//
// The registry owns the plugin processes from then on: Close stops them.
func (r *ToolRegistry) LoadPlugins(ctx context.Context, dir string) ([]PluginReport, error) {
	paths, err := findPlugins(dir)
	if err != nil {
		return nil, err
	}
	lock, err := ReadLockFile(LockFilePath(dir, r.lockFile))
	if err != nil {
		return nil, err
	}
	procs := make([]*pluginProcess, len(paths))
	descs := make([]*toolv1.DescribeResponse, len(paths))
	errs := make([]error, len(paths))
	cached := make([]bool, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		procs[i] = newPluginProcess(path, r.logger, r.startTimeout, r.idleTimeout)
		procs[i].lock, procs[i].pluginEnv = lock, r.pluginEnv
		if errs[i] = lock.Check(path); errs[i] != nil {
			continue
		}
		// A fresh cache entry saves the launch, or under --eager at least
		// hashing the binary again to store what it already holds.
		fresh := r.cache.lookup(path)
		if fresh != nil && !r.eager {
			descs[i], cached[i] = fresh, true
			continue
		}
		wg.Go(func() {
			// The launch has startTimeout; the slack lets its own error,
			// which says more, come first.
			dctx, cancel := context.WithTimeout(ctx, r.startTimeout+2*time.Second)
			defer cancel()
			descs[i], errs[i] = procs[i].describe(dctx)
			if errs[i] == nil && fresh == nil {
				r.cache.store(path, descs[i])
			}
		})
	}
	wg.Wait()

	reports := make([]PluginReport, len(paths))
	for i, proc := range procs {
		reports[i] = r.adopt(proc, descs[i], errs[i])
		reports[i].Cached = cached[i]
		reports[i].Launched = !cached[i]
	}
	r.mu.Lock()
	r.reports = append(r.reports, reports...)
	r.mu.Unlock()
	return reports, nil
}

// ErrPluginNotFound: no loaded plugin has that name.
var ErrPluginNotFound = errors.New("plugin not found")

// ResetPlugin re-enables a plugin that was disabled after repeated
// crashes, and forgets its crashes: its next call starts it again at
// once. name is the binary's file name or the name the plugin gives
// itself. Enable of one of the plugin's tools does the same.
func (r *ToolRegistry) ResetPlugin(name string) error {
	r.mu.RLock()
	var found *pluginProcess
	for _, p := range r.plugins {
		if p.name == name {
			found = p
		}
	}
	for _, rep := range r.reports {
		if found == nil && rep.Name == name && rep.Err == nil {
			for _, p := range r.plugins {
				if p.path == rep.Path {
					found = p
				}
			}
		}
	}
	r.mu.RUnlock()
	if found == nil {
		return fmt.Errorf("%w: %s", ErrPluginNotFound, name)
	}
	found.reset()
	return nil
}

// adopt registers the tools of a described plugin, or reports why not.
func (r *ToolRegistry) adopt(proc *pluginProcess, desc *toolv1.DescribeResponse, err error) PluginReport {
	rep := PluginReport{Path: proc.path, Name: proc.name}
	if err != nil {
		proc.close()
		rep.Err = err
		r.logger.Warn("skipping plugin", "path", proc.path, "reason", err)
		return rep
	}
	if desc.GetPluginName() != "" {
		rep.Name = desc.GetPluginName()
	}
	rep.Version = desc.GetPluginVersion()
	rep.ProtocolMinor = desc.GetProtocolMinor()
	for _, spec := range desc.GetTools() {
		if err := r.Register(newPluginTool(proc, spec)); err != nil {
			rep.Refused = append(rep.Refused, err.Error())
			r.logger.Warn("refusing tool", "path", proc.path, "tool", spec.GetName(), "reason", err)
			continue
		}
		rep.Tools = append(rep.Tools, spec.GetName())
	}
	if len(rep.Tools) == 0 {
		proc.close()
		rep.Err = errors.New("it serves no tool that could be registered")
		r.logger.Warn("skipping plugin", "path", proc.path, "reason", rep.Err)
		return rep
	}
	r.mu.Lock()
	r.plugins = append(r.plugins, proc)
	r.mu.Unlock()
	return rep
}

// findPlugins lists the plugin binaries in dir, sorted by name.
func findPlugins(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the plugins directory: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), PluginPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := os.Stat(path) // follows a symlink to the binary
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			continue
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return paths, nil
}

// Plugins reports what became of every plugin binary loaded so far.
func (r *ToolRegistry) Plugins() []PluginReport {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]PluginReport(nil), r.reports...)
}

// Close stops every plugin process the registry started, with their
// children, within a bounded time, and leaves the registry's plugin tools
// unable to run. Close is idempotent.
func (r *ToolRegistry) Close() error {
	r.mu.Lock()
	procs := r.plugins
	r.plugins = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.close)
	}
	wg.Wait()
	return nil
}

// pluginTool is a tool served by a plugin binary.
type pluginTool struct {
	proc   *pluginProcess
	schema ChatTool
	ann    Annotations
	// checksArgs: the plugin checks the arguments against the schema
	// itself (protocol 1.2 checks_arguments).
	checksArgs bool
}

var (
	_ ExecutableTool = (*pluginTool)(nil)
	_ sdk.Annotator  = (*pluginTool)(nil)
)

func newPluginTool(proc *pluginProcess, spec *toolv1.ToolSpec) *pluginTool {
	a := spec.GetAnnotations()
	return &pluginTool{
		proc:       proc,
		checksArgs: spec.GetChecksArguments(),
		schema:     sdk.NewChatTool(spec.GetName(), spec.GetDescription(), json.RawMessage(spec.GetParametersSchema())),
		ann: Annotations{
			ReadOnly:    a.GetReadOnly(),
			Destructive: a.GetDestructive(),
			Idempotent:  a.GetIdempotent(),
			OpenWorld:   a.GetOpenWorld(),
			OptIn:       spec.GetOptIn(),
			Timeout:     time.Duration(spec.GetTimeoutMs()) * time.Millisecond,
		},
	}
}

func (t *pluginTool) Name() string             { return t.schema.Function.Name }
func (t *pluginTool) Schema() ChatTool         { return t.schema }
func (t *pluginTool) Annotations() Annotations { return t.ann }

func (t *pluginTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	return t.proc.execute(ctx, t.Name(), args)
}
