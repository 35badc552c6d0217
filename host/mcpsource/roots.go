package mcpsource

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roots are the roots the client offers the server (Options.Roots,
// SetRoots): the directories it may work in, as file:// URIs.
type roots struct {
	mu      sync.Mutex
	client  *mcp.Client
	on      bool
	offered []string // their paths, as last set
	// since is when the session began; asked is closed once the server
	// has been answered its first roots/list, at answered.
	since    time.Time
	asked    chan struct{}
	answered time.Time
}

// How long a session's first calls wait for the server to take its roots
// (settle): until it has asked for them and rootsSettle has passed since
// the answer, or, when it has not asked, rootsAsk since the session
// began. A server asks as its session begins; one that runs a call before
// its answer is in would run it without its roots (server-filesystem
// answers "path outside allowed directories", having none). The server
// starts on its first call, so without the wait that call would race its
// roots.
const (
	rootsAsk    = 200 * time.Millisecond
	rootsSettle = 50 * time.Millisecond
)

// declareRoots declares the roots capability, with listChanged, when
// opts offers roots.
func declareRoots(c *mcp.ClientOptions, opts Options) {
	if opts.Roots != nil {
		c.Capabilities.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
}

// offer gives client the roots of opts, before it connects: the server
// asks for them with roots/list, and the SDK answers.
func (r *roots) offer(client *mcp.Client, opts Options) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.client = client
	if opts.Roots == nil {
		return
	}
	r.on = true
	r.offered = slices.Clone(opts.Roots)
	r.asked = make(chan struct{})
	var once sync.Once
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "roots/list" {
				once.Do(func() {
					r.mu.Lock()
					r.answered = time.Now()
					r.mu.Unlock()
					close(r.asked)
				})
			}
			return res, err
		}
	})
	client.AddRoots(fileRoots(r.offered)...)
}

// begin marks the end of the handshake, from which the server may ask
// for its roots.
func (r *roots) begin() {
	r.mu.Lock()
	r.since = time.Now()
	r.mu.Unlock()
}

// settle waits, before a call, for the server to take its roots: see
// rootsAsk. It returns at once past the session's first moments, and
// never waits past ctx.
func (r *roots) settle(ctx context.Context) {
	if !r.on {
		return
	}
	select {
	case <-r.asked:
	default:
		r.mu.Lock()
		since := r.since
		r.mu.Unlock()
		if wait := time.Until(since.Add(rootsAsk)); wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-r.asked:
			case <-t.C:
				return
			case <-ctx.Done():
				return
			}
		} else {
			return
		}
	}
	r.mu.Lock()
	wait := time.Until(r.answered.Add(rootsSettle))
	r.mu.Unlock()
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// errNoRoots is SetRoots on a session opened without roots.
var errNoRoots = errors.New("the session offers no roots: it was opened without Options.Roots, so the server was told the client has none")

// SetRoots replaces the roots offered to the server with paths (absolute
// directories), and tells the server with notifications/roots/list_changed
// when they changed, so that it asks for them again: roots it no longer
// has are withdrawn first, then the new ones are offered. A session
// opened without Options.Roots has declared no roots capability, and
// cannot offer any later: SetRoots returns an error.
func (s *Session) SetRoots(paths []string) error {
	r := &s.roots
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return errNoRoots
	}
	var gone []string
	for _, p := range r.offered {
		if !slices.Contains(paths, p) {
			gone = append(gone, rootURI(p))
		}
	}
	var added []string
	for _, p := range paths {
		if !slices.Contains(r.offered, p) && !slices.Contains(added, p) {
			added = append(added, p)
		}
	}
	r.offered = slices.Clone(paths)
	if len(gone) > 0 {
		r.client.RemoveRoots(gone...)
	}
	if len(added) > 0 {
		r.client.AddRoots(fileRoots(added)...)
	}
	return nil
}

// Roots returns the paths of the roots offered to the server, nil when
// the session offers none.
func (s *Session) Roots() []string {
	s.roots.mu.Lock()
	defer s.roots.mu.Unlock()
	return slices.Clone(s.roots.offered)
}

// fileRoots are paths as MCP roots: a file:// URI each, named after its
// last element.
func fileRoots(paths []string) []*mcp.Root {
	out := make([]*mcp.Root, 0, len(paths))
	for _, p := range paths {
		out = append(out, &mcp.Root{URI: rootURI(p), Name: filepath.Base(p)})
	}
	return out
}

// rootURI is the file:// URI of the absolute path p, escaped as a URL's
// path is: "file:///home/me/my%20project".
func rootURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}
