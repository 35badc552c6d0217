package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/internal/atomicfile"
)

// LauncherStartTimeout is how long an MCP server whose command is a
// launcher that may download what it runs (npx, uvx, pnpx, bunx, pipx,
// npm exec, pnpm dlx, yarn dlx, bun x, uv run, uv tool run, docker run,
// podman run) has to start and complete MCP's handshake, unless its
// StartupTimeout says otherwise: its first start installs the package.
// Other servers get Options.PluginStartTimeout (10 s by default).
const LauncherStartTimeout = time.Minute

// launcherStartsAtOnce is how many first starts of launchers run at once
// at load: each installs a package, which takes the CPU, the disk and
// the network, and ten at once on a small machine take longer than
// three at a time.
const launcherStartsAtOnce = 3

// Failed starts are remembered (see StartFailure) for failureBackoff,
// doubled at each failure in a row up to failureBackoffMax. A failure
// more than failureForget old no longer counts towards the doubling.
const (
	failureBackoff    = time.Minute
	failureBackoffMax = 30 * time.Minute
	failureForget     = 24 * time.Hour
)

// maxFailureReason bounds the reason kept of a failed start.
const maxFailureReason = 2000

// startTimeout is how long the server has to start: StartupTimeout when
// set, else def, or LauncherStartTimeout for a launcher when def is
// shorter.
func (s *MCPServer) startTimeout(def time.Duration) time.Duration {
	switch {
	case s.StartupTimeout > 0:
		return s.StartupTimeout
	case s.downloads():
		return max(def, LauncherStartTimeout)
	}
	return def
}

// downloadingLaunchers are the commands that may download what they run
// whatever their arguments; subcommandLaunchers, the commands that do
// with one of the subcommands listed.
var (
	downloadingLaunchers = []string{"npx", "pnpx", "bunx", "uvx", "pipx"}
	subcommandLaunchers  = map[string][]string{
		"npm":    {"exec", "x"},
		"pnpm":   {"dlx"},
		"yarn":   {"dlx"},
		"bun":    {"x"},
		"uv":     {"run", "tool"},
		"docker": {"run"},
		"podman": {"run"},
	}
)

// downloads reports whether the server's command is a launcher that may
// download what it runs (see LauncherStartTimeout).
func (s *MCPServer) downloads() bool {
	x, err := s.expanded()
	if err != nil || x.transport() != "stdio" {
		return false
	}
	name := commandName(x.Command)
	if slices.Contains(downloadingLaunchers, name) {
		return true
	}
	subs, ok := subcommandLaunchers[name]
	return ok && slices.Contains(subs, subcommand(x.Args))
}

// commandName is the name a command is known by: its file name without
// the suffix of a Windows executable or script.
func commandName(command string) string {
	name := filepath.Base(command)
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		if strings.EqualFold(filepath.Ext(name), ext) {
			return name[:len(name)-len(ext)]
		}
	}
	return name
}

// subcommand is the first argument that is not an option.
func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// startGate lets a few first starts of launchers run at once; its zero
// value is ready.
type startGate struct {
	once  sync.Once
	slots chan struct{}
}

// enter waits for a slot, or for ctx to end; the caller calls the
// function it returns when its start is over.
func (g *startGate) enter(ctx context.Context) (func(), error) {
	g.once.Do(func() { g.slots = make(chan struct{}, launcherStartsAtOnce) })
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startAtLoad starts the server at load and lists its tools; first: its
// description is not cached (it may never have started, and a launcher
// may have a package to install). A launcher's first start waits for
// one of the launcherStartsAtOnce slots, and its start timeout runs from
// then on. A server over stdio that fails is remembered (StartFailure):
// the error is then a *StartFailure. One that starts is forgotten.
func (r *ToolRegistry) startAtLoad(ctx context.Context, proc *toolSource, srv *MCPServer, id string, first bool) (*description, error) {
	if first && srv.downloads() {
		release, err := r.launcherStarts.enter(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	// The launch has its own bounds (launchMCPRepairing); the slack lets
	// its own error, which says more, arrive first.
	budget := proc.startTimeout + 2*time.Second
	if _, ours := srv.npxCache(r.sandbox.launchers); ours {
		// A start whose install was cut short is repaired and made
		// again, once.
		budget += proc.startTimeout + 2*(npxLockStale+time.Second)
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	key := srv.failureKey(id, proc.startTimeout, r.walls(srv))
	desc, err := proc.describeMCP(dctx)
	if err == nil {
		r.cache.storeID(id, desc)
		r.cache.forgetFailure(key)
		return desc, nil
	}
	if ctx.Err() != nil || errors.Is(err, errShuttingDown) || srv.transport() != "stdio" {
		// Not the server's doing, or a remote server: nothing of it
		// starts here.
		return nil, err
	}
	if f := r.cache.recordFailure(key, srv.Name, err, time.Now()); f != nil {
		return nil, f
	}
	return nil, err
}

// StartFailure is an MCP server over stdio that failed to start (or to
// list its tools) at load, as the host remembers it beside the
// description cache (Options.CacheDir; nothing is remembered without
// one), keyed by what its entry says: its command and what it resolves
// to, arguments, working directory, environment (values included) and
// start timeout. Until RetryAt, a registry loading the same entry does
// not start it again: it is skipped at once with this error, so that a
// broken server costs other commands nothing. The wait is a minute after
// the first failure in a row, doubled at each next one, up to 30
// minutes. A changed entry is another server, started at once; so is
// every server of an eager registry (Options.Eager, agenthost --eager),
// whose start replaces what is remembered. A server that starts is
// forgotten.
//
// A server skipped for want of a description (SourceReport.Err) holds a
// *StartFailure whenever its failure is remembered: Remembered says
// whether it failed at this load or an earlier one.
type StartFailure struct {
	// Server is the server's name.
	Server string
	// Reason is why it failed, in the words of the error.
	Reason string
	// At is when it last failed; Failures counts its failures in a row.
	At       time.Time
	Failures int
	// RetryAt is when a load starts it again.
	RetryAt time.Time
	// Remembered: the failure is an earlier load's, and the server was
	// not started this time.
	Remembered bool

	err error // the failure itself, at the load that met it
}

// Error is the failure's reason; for one remembered, with when it
// happened and when the server is tried again.
func (f *StartFailure) Error() string {
	if !f.Remembered {
		return f.Reason
	}
	return fmt.Sprintf("it failed to start %s and is not started again until %s (an eager host starts it now): %s",
		agoText(f.At, time.Now()), clockText(f.RetryAt, time.Now()), f.Reason)
}

// Unwrap is the failure itself, at the load that met it.
func (f *StartFailure) Unwrap() error { return f.err }

// agoText says when t was, before now: "12s ago (16:14:21)".
func agoText(t, now time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%s ago (%s)", d, clockText(t, now))
}

// clockText is t on the local clock: the time alone on the day of now,
// with the date on another day.
func clockText(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// failureKey is the key of the server's failures: what its entry says,
// expanded (identity, whose key id is, and the values of its environment
// and headers, its name and start timeout), and the walls it starts in
// (walls: the sandbox mode and its grants): an entry changed in any way,
// or a grant given since, starts it again at once. It is a hash: no
// value is written down.
func (s *MCPServer) failureKey(id string, timeout time.Duration, walls string) string {
	x, _ := s.expanded()
	h := sha256.New()
	fmt.Fprintf(h, "mcp-start/1\x00%s\x00%s\x00%s\x00%s", id, s.Name, timeout, walls)
	for _, m := range []map[string]string{x.Env, x.Headers} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "\x00%s=%s", k, m[k])
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// walls says what a server's sandbox is made of: the mode, and what the
// user grants it, on the command line and in its entry.
func (r *ToolRegistry) walls(srv *MCPServer) string {
	return fmt.Sprintf("%v\x00%+v\x00%+v", r.sandbox.mode, r.sandbox.grants[MCPSourcePrefix+srv.Name], srv.Grant)
}

// failureRecord is the file of a remembered failure.
type failureRecord struct {
	Path     string    `json:"path"` // failurePrefix + key
	Server   string    `json:"server"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
	Failures int       `json:"failures"`
	RetryAt  time.Time `json:"retry_at"`
}

// failurePrefix starts the key of a failure's file in the cache.
const failurePrefix = "mcp-start-failure:"

// readFailure reads the failure remembered under key; nil when there is
// none (or no cache).
func (c *descCache) readFailure(key string) *failureRecord {
	if c == nil || c.dir == "" {
		return nil
	}
	data, err := os.ReadFile(c.file(failurePrefix + key))
	if err != nil {
		return nil
	}
	var rec failureRecord
	if json.Unmarshal(data, &rec) != nil || rec.Path != failurePrefix+key || rec.Failures < 1 ||
		rec.RetryAt.Sub(rec.At) > failureBackoffMax {
		return nil
	}
	return &rec
}

// rememberedFailure is the failure remembered of the server whose
// description is not cached, when a load must not start it yet: nil when
// there is none, its wait is over, or the registry is eager.
func (r *ToolRegistry) rememberedFailure(srv *MCPServer, id string, timeout time.Duration) *StartFailure {
	if r.eager || srv.transport() != "stdio" {
		return nil
	}
	rec := r.cache.readFailure(srv.failureKey(id, timeout, r.walls(srv)))
	if rec == nil || !time.Now().Before(rec.RetryAt) {
		return nil
	}
	return &StartFailure{Server: srv.Name, Reason: rec.Reason, At: rec.At, Failures: rec.Failures, RetryAt: rec.RetryAt, Remembered: true}
}

// recordFailure remembers that the server failed to start at now, and
// returns the failure; nil when there is no cache to remember it in.
func (c *descCache) recordFailure(key, server string, err error, now time.Time) *StartFailure {
	if c == nil || c.dir == "" {
		return nil
	}
	n := 1
	if old := c.readFailure(key); old != nil && now.Sub(old.At) < failureForget {
		n = old.Failures + 1
	}
	wait := failureBackoffMax
	if n < 16 {
		wait = min(failureBackoff<<(n-1), failureBackoffMax)
	}
	reason := err.Error()
	if len(reason) > maxFailureReason {
		reason = strings.ToValidUTF8(reason[:maxFailureReason], "") + "…"
	}
	rec := failureRecord{Path: failurePrefix + key, Server: server, Reason: reason, At: now.UTC(), Failures: n, RetryAt: now.Add(wait).UTC()}
	data, jerr := json.Marshal(rec)
	if jerr != nil || atomicfile.Write(c.file(rec.Path), data, 0o600) != nil {
		return nil
	}
	return &StartFailure{Server: server, Reason: err.Error(), At: now, Failures: n, RetryAt: now.Add(wait), err: err}
}

// forgetFailure forgets the failures remembered under key.
func (c *descCache) forgetFailure(key string) {
	if c == nil || c.dir == "" {
		return
	}
	_ = os.Remove(c.file(failurePrefix + key))
}
