package host

import (
	"context"
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
// call of a tool that touches the roots fails with "Error executing NAME:
// the client's roots (…) lie outside the workspace roots (…)"; a tool
// whose plugin declares it touches no roots (sdk.RootsNone) runs, with
// no roots.
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
	if kept, _ := c.narrowed(r).([]string); len(kept) > 0 || !touchesRoots(e) {
		return nil
	}
	if len(c.asked) == 0 {
		return fmt.Errorf("the client offers no usable roots, so no file of the workspace roots (%s) may be touched: add a root inside them to the client", strings.Join(r.roots, ", "))
	}
	return fmt.Errorf("the client's roots (%s) lie outside the workspace roots (%s): add a root inside them to the client", strings.Join(c.asked, ", "), strings.Join(r.roots, ", "))
}

// touchesRoots reports whether a tool may touch the workspace roots: any
// tool but one whose plugin declares it touches none (sdk.RootsNone).
func touchesRoots(e *entry) bool {
	if e.source == nil {
		return true
	}
	e.source.mu.Lock()
	defer e.source.mu.Unlock()
	return e.source.perms.Roots != sdk.RootsNone
}
