package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/sdk"
)

// WithRoots returns a context whose tool calls see the registry's
// workspace roots narrowed to roots: the roots an MCP client offers, say.
// Narrowing never widens. Each root asked for that lies inside (or is) a
// workspace root is kept, by its real path; one that contains workspace
// roots is narrowed to them; one outside them all, one that is not an
// absolute path of a directory, and one whose symbolic links lead
// outside, are dropped. The kept roots keep the order of roots, so that
// the first one asked for, if kept, is where relative paths resolve.
//
// When nothing is left (roots is empty, or every root is dropped), a
// call of a tool that touches the roots (TouchesRoots) fails with "Error
// executing NAME: the client's roots (…) lie outside the workspace roots
// (…)"; any other tool (one whose plugin declares sdk.RootsNone, most MCP
// servers' tools) runs, with no roots.
func WithRoots(ctx context.Context, roots []string) context.Context {
	return context.WithValue(ctx, clientRootsKey{}, &clientRoots{asked: slices.Clone(roots)})
}

// clientRootsKey is the context key of the roots WithRoots asks for.
type clientRootsKey struct{}

// clientRoots are the roots a call's context asks for, and what they
// leave of a registry's roots, worked out once per call.
type clientRoots struct {
	asked []string

	once sync.Once
	reg  *ToolRegistry
	kept []string
	// value is kept as the interface value sdk.Roots finds.
	value any
}

// narrowed returns what c leaves of r's workspace roots, as the value
// sdk.Roots finds ([]string).
func (c *clientRoots) narrowed(r *ToolRegistry) any {
	c.once.Do(func() {
		c.reg = r
		c.kept, _ = narrowRoots(r.roots, c.asked)
		c.value = c.kept
	})
	if c.reg != r {
		// The context went on to another registry's call.
		kept, _ := narrowRoots(r.roots, c.asked)
		return kept
	}
	return c.value
}

// NarrowRoots returns the registry's workspace roots narrowed to roots, as
// a call under WithRoots(ctx, roots) sees them, and why each root it drops
// is dropped.
func (r *ToolRegistry) NarrowRoots(roots []string) (kept []string, dropped []error) {
	return narrowRoots(r.roots, roots)
}

// Logger returns the logger the registry reports to (Options.Logger).
func (r *ToolRegistry) Logger() hclog.Logger { return r.logger }

// narrowRoots keeps of the workspace roots what asked allows; see
// WithRoots. The comparison is by real paths (symbolic links resolved), so
// that a root given through a link that leads outside widens nothing.
func narrowRoots(workspace, asked []string) (kept []string, dropped []error) {
	reals := make([]string, len(workspace))
	for i, w := range workspace {
		reals[i] = realPath(w)
	}
	add := func(p string) {
		if !slices.Contains(kept, p) {
			kept = append(kept, p)
		}
	}
	for _, a := range asked {
		real, err := askedRoot(a)
		if err != nil {
			dropped = append(dropped, err)
			continue
		}
		inside, contains := false, false
		for i, w := range reals {
			if within(real, w) {
				inside = true
				break
			}
			if within(w, real) {
				contains = true
				add(workspace[i])
			}
		}
		switch {
		case inside:
			add(real)
		case !contains:
			dropped = append(dropped, fmt.Errorf("root %s lies outside the workspace roots", a))
		}
	}
	return kept, dropped
}

// askedRoot is the real path of a root asked for, which must be the
// absolute path of a directory.
func askedRoot(p string) (string, error) {
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("root %q is not an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("root %s: %w", p, pathErr(err))
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", p, pathErr(err))
	}
	if !info.IsDir() {
		return "", fmt.Errorf("root %s is not a directory", p)
	}
	return real, nil
}

// realPath is p with its symbolic links resolved, or p cleaned when they
// cannot be.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return filepath.Clean(p)
}

// pathErr is the error of an os operation on a path, without the
// operation's name and the path.
func pathErr(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// checkRoots refuses a call of a tool that touches the workspace roots
// when the roots its context asks for (WithRoots) leave none of them.
func (r *ToolRegistry) checkRoots(ctx context.Context, e *entry) error {
	c, ok := ctx.Value(clientRootsKey{}).(*clientRoots)
	if !ok {
		return nil
	}
	if kept, _ := c.narrowed(r).([]string); len(kept) > 0 || !r.touchesRoots(e) {
		return nil
	}
	if len(c.asked) == 0 {
		return fmt.Errorf("the client offers no usable roots, so no file of the workspace roots (%s) may be touched: add a root inside them to the client", strings.Join(r.roots, ", "))
	}
	return fmt.Errorf("the client's roots (%s) lie outside the workspace roots (%s): add a root inside them to the client", strings.Join(c.asked, ", "), strings.Join(r.roots, ", "))
}

// A RootAccessor is an in-process tool (Register) that says what it does
// in the workspace roots, as a plugin says it of its tools
// (sdk.Permissions.Roots). One that says sdk.RootsNone runs when a
// caller's roots (WithRoots) leave none of the workspace roots; an
// in-process tool that says anything else, or does not implement
// RootAccessor, is refused then.
type RootAccessor interface {
	RootAccess() sdk.RootAccess
}

// TouchesRoots reports whether the named tool may touch the workspace
// roots, and so is refused when a caller's roots (WithRoots) leave none
// of them:
//   - a plugin's tool, unless its plugin declares sdk.RootsNone;
//   - an in-process tool, unless it says sdk.RootsNone (RootAccessor);
//   - an MCP server's tool when the server runs here (over stdio), which
//     gives it the workspace roots, and either the tool takes a path (an
//     argument named path, paths, file, dir, folder, root, source,
//     destination, cwd and the like) or the server's configuration
//     points it into the workspace: an existing path that its arguments
//     or its cwd name, or that it is granted (its grant, the user's
//     grants to mcp:NAME), lies in a workspace root or holds one. A
//     server's launcher cache does not count. A remote server's (url)
//     tools reach no file here.
//
// An unknown tool touches nothing: its call is refused as unknown.
func (r *ToolRegistry) TouchesRoots(name string) bool {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	return ok && r.touchesRoots(e)
}

// touchesRoots is TouchesRoots of a registered tool.
func (r *ToolRegistry) touchesRoots(e *entry) bool {
	if e.source == nil {
		a, ok := e.tool.(RootAccessor)
		return !ok || a.RootAccess() != sdk.RootsNone
	}
	e.source.mu.Lock()
	perms := e.source.perms
	e.source.mu.Unlock()
	if perms.Roots == sdk.RootsNone {
		return false
	}
	if k, ok := e.source.kind.(mcpKind); ok {
		if k.server.transport() != "stdio" {
			return false
		}
		return takesPaths(e.schema.Function.Parameters) || k.server.pointsInto(r.roots, perms, r.sandbox)
	}
	return true
}

// pathWords are what the name of an argument that holds a path has in
// it, as MCP servers name them (path, paths, repo_path, file, filename,
// directory, dir, folder, root...); pathNames are such names without
// those words.
var (
	pathWords = []string{"path", "file", "dir", "folder", "root"}
	pathNames = []string{"cwd", "src", "dest", "source", "destination"}
)

// takesPaths reports whether a parameters schema has a property whose
// name says it holds a path (pathWords, pathNames; letters' case, "_" and
// "-" aside).
func takesPaths(params json.RawMessage) bool {
	lower := bytes.ToLower(params)
	if !slices.ContainsFunc(slices.Concat(pathWords, pathNames), func(w string) bool { return bytes.Contains(lower, []byte(w)) }) {
		return false // the common case, without decoding the schema
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(params, &schema) != nil {
		return true // it cannot be read: it may
	}
	for name := range schema.Properties {
		n := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
		if slices.Contains(pathNames, n) || slices.ContainsFunc(pathWords, func(w string) bool { return strings.Contains(n, w) }) {
			return true
		}
	}
	return false
}

// pointsInto reports whether the server's configuration points it into
// the workspace roots: see TouchesRoots. perms are what its process is
// granted.
func (s *MCPServer) pointsInto(workspace []string, perms sdk.Permissions, sandbox *sandboxConfig) bool {
	x, err := s.expanded()
	if err != nil {
		return true // it does not start: nothing is lost
	}
	var launcher string
	if sandbox != nil {
		launcher, _ = s.launcherDir(sandbox.launchers)
	}
	paths := append(expandPaths(perms.Read), expandPaths(perms.Write)...)
	if x.Dir != "" {
		paths = append(paths, x.Dir)
	}
	reals := make([]string, len(workspace))
	for i, w := range workspace {
		reals[i] = realPath(w)
	}
	for _, p := range paths {
		p = absPath(p)
		if launcher != "" && within(p, launcher) {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		real := realPath(p)
		for _, w := range reals {
			if within(real, w) || within(w, real) {
				return true
			}
		}
	}
	return false
}
