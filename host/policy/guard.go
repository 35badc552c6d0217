package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
)

// Mode says what happens to a call that no rule decides.
type Mode string

const (
	// ModeAsk: tools annotated read-only run; every other call is asked.
	ModeAsk Mode = "ask"
	// ModeEdits: also the file tools' changes inside the roots run;
	// commands and other tools are asked.
	ModeEdits Mode = "edits"
	// ModeAuto: every call runs unless an ask or deny rule matches.
	ModeAuto Mode = "auto"
)

// Modes are the modes, in order of trust.
var Modes = []Mode{ModeAsk, ModeEdits, ModeAuto}

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.TrimSpace(s))
	if slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown approval mode %q: want ask, edits or auto", s)
}

// EditTools are the file tools that change files: what ModeEdits lets
// run inside the roots.
var EditTools = map[string]bool{
	"write_file": true, "edit_file": true, "mkdir": true, "move": true, "remove": true,
}

// Request is a question to an [Approver]: may this call run?
type Request struct {
	// Call is the call, as the registry's interceptors see it. Read it;
	// do not change it.
	Call *host.Call
	// Paths are the call's path arguments as resolved inside the roots
	// (file tools only).
	Paths []string
	// Rule is the ask rule that asks; nil when the mode asks.
	Rule *Rule
	// Mode is the guard's mode.
	Mode Mode
	// Why says what asks, for people: `rule "run_bash(git push*)"` or
	// "mode ask".
	Why string
	// SessionRules are the rules an AllowSession answer adds to the
	// session: later calls they match are not asked again.
	SessionRules []string
	// Preview shows what the call would do: the command line of
	// run_bash, the diff of write_file and edit_file, the arguments of
	// other tools. Options.Preview makes it.
	Preview string
}

// Verdict is an approver's answer.
type Verdict int

const (
	// Refuse: the call does not run; the model reads that the user
	// denied it, and the reason, if one was given.
	Refuse Verdict = iota
	// AllowOnce: this call runs.
	AllowOnce
	// AllowSession: this call runs, and so do the later calls of the
	// session that Request.SessionRules match.
	AllowSession
	// Later: the question waits for an answer given later, maybe in
	// another process: the call does not run now, and the caller that
	// collects such calls (WithDeferrals; an Agent does) is told of it and
	// may resume it with the answer (WithAnswer). Where nothing collects
	// them, Later denies.
	Later
)

// Deferrals collects the calls whose question an Approver answered
// Later. It is safe for concurrent use.
type Deferrals struct {
	mu    sync.Mutex
	calls []Deferred
}

// Deferred is a call whose question waits for an answer.
type Deferred struct {
	// Call is the call; Why says what asks; SessionRules are what an
	// AllowSession answer would add.
	Call         *host.Call
	Why          string
	SessionRules []string
}

// Calls returns the calls deferred so far.
func (d *Deferrals) Calls() []Deferred {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

type deferralsKey struct{}

// WithDeferrals returns a context whose calls answered Later are
// collected in d, instead of denied.
func WithDeferrals(ctx context.Context, d *Deferrals) context.Context {
	return context.WithValue(ctx, deferralsKey{}, d)
}

type answerKey struct{}

// WithAnswer returns a context whose call, if the guard would ask about
// it, takes ans as the answer instead of asking: the answer given later
// to a deferred call. Deny rules still deny it.
func WithAnswer(ctx context.Context, ans Answer) context.Context {
	return context.WithValue(ctx, answerKey{}, ans)
}

// Answer is what an approver answers.
type Answer struct {
	Verdict Verdict
	// Reason is a denial's reason, for the model; may be "".
	Reason string
}

// Approver answers the questions of a guard: a person at a terminal, an
// MCP client's user through elicitation, an embedding program's own UI.
// It is asked one question at a time. An error, or an answer that does
// not come before ctx ends (the call's deadline), denies the call.
type Approver interface {
	Approve(ctx context.Context, req *Request) (Answer, error)
}

// ApproverFunc makes a function an [Approver].
type ApproverFunc func(ctx context.Context, req *Request) (Answer, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req *Request) (Answer, error) { return f(ctx, req) }

// Session is one conversation's approver and the rules its answers added
// (AllowSession). A guard keeps one for calls whose context names none;
// give each conversation its own with WithSession, so that one user's
// "allow for the session" is not another's.
type Session struct {
	approver Approver
	// askMu makes one question at a time in the session.
	askMu sync.Mutex

	mu sync.Mutex
	// accepted are the ask rules answered AllowSession, by text.
	accepted map[string]bool
	// allowed are the rules AllowSession added for what the mode asked.
	allowed Policy
}

// NewSession returns a session whose questions go to approver; nil means
// no one can be asked, and a call to ask about is denied with a text
// that says which rule would allow it.
func NewSession(approver Approver) *Session {
	return &Session{approver: approver, accepted: map[string]bool{}}
}

// Rules returns the rules the session's answers added, as written.
func (s *Session) Rules() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for text := range s.accepted {
		out = append(out, text)
	}
	for _, r := range s.allowed.Allow {
		out = append(out, r.Text)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Remembered returns what the session's AllowSession answers added: the
// ask rules answered so (asks), and the rules added for what the mode
// asked (allows), as written. Remember puts them back.
func (s *Session) Remembered() (asks, allows []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for text := range s.accepted {
		asks = append(asks, text)
	}
	slices.Sort(asks)
	for _, r := range s.allowed.Allow {
		allows = append(allows, r.Text)
	}
	return asks, allows
}

// Remember adds what Remembered returned, to a session resumed later.
func (s *Session) Remember(asks, allows []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, text := range allows {
		if err := s.allowed.Add(Allow, text); err != nil {
			return err
		}
	}
	for _, text := range asks {
		if _, err := Parse(text); err != nil {
			return err
		}
		s.accepted[text] = true
	}
	return nil
}

// allows reports whether the session's answers allow c, which the rule
// asks about (nil: the mode asks).
func (s *Session) allows(c Call, asking *Rule) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if asking != nil {
		return asking.Text, s.accepted[asking.Text]
	}
	if eff, r := s.allowed.Decide(c); eff == Allow {
		return r.Text, true
	}
	return "", false
}

func (s *Session) add(asking *Rule, rules []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if asking != nil {
		s.accepted[asking.Text] = true
		return
	}
	for _, text := range rules {
		_ = s.allowed.Add(Allow, text)
	}
}

type sessionKey struct{}

// WithSession returns a context whose calls are asked about through s.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// Options configure a [Guard].
type Options struct {
	// Mode decides a call no rule decides; "" means ModeAuto.
	Mode Mode
	// Approver is asked for calls whose context carries no Session
	// (WithSession); nil means no one can be asked.
	Approver Approver
	// Typed: the calls are a person's own (agenthost call): they run
	// unless a deny rule matches.
	Typed bool
	// Preview makes Request.Preview; nil shows the arguments (and
	// run_bash's command).
	Preview func(ctx context.Context, req *Request) string
	// Logger hears of calls denied because no one could be asked, so
	// that the user learns what the model was told. Nil: not logged.
	Logger hclog.Logger
}

// Guard enforces a policy on a registry's calls: install its Intercept
// as one of the registry's interceptors (host.Options.Interceptors), so
// that the same rules hold whoever makes the call.
type Guard struct {
	policy  *Policy
	opts    Options
	session *Session
	// roots are the roots' real paths (symbolic links followed), by
	// root, found once: a tool process's sandbox is made of them as they
	// are when it starts, and a root that moves later is not followed
	// there either.
	roots sync.Map
}

// NewGuard returns a guard of p (nil: no rules) with opts.
func NewGuard(p *Policy, opts Options) *Guard {
	if p == nil {
		p = &Policy{}
	}
	if opts.Mode == "" {
		opts.Mode = ModeAuto
	}
	return &Guard{policy: p, opts: opts, session: NewSession(opts.Approver)}
}

// Mode returns the guard's mode.
func (g *Guard) Mode() Mode { return g.opts.Mode }

// Session returns the session of calls whose context names none.
func (g *Guard) Session() *Session { return g.session }

// Intercept decides whether call runs: a deny rule denies it; an ask
// rule, or the mode, asks the session's approver; an allow rule, the
// session's earlier answers, or the mode let it run. It records what
// decided in call.Decision.
func (g *Guard) Intercept(ctx context.Context, call *host.Call, next host.Handler) host.Result {
	allow := func(by string) host.Result {
		call.Decision = &host.Decision{Allowed: true, By: by}
		return next(ctx, call)
	}
	if ctx.Value(previewKey{}) != nil && isDryRun(call) {
		return allow("a preview for the user")
	}
	c, paths := g.policyCall(call)
	effect, rule := g.policy.Decide(c)
	typed := g.opts.Typed || ctx.Value(typedKey{}) != nil
	switch {
	case effect == Deny:
		call.Decision = &host.Decision{By: rule.by()}
		return host.Denied(call.Tool, "denied by rule "+quote(rule.Text))
	case typed:
		return allow("typed by the user")
	case effect == Allow:
		return allow(rule.by())
	case effect == Ask:
		return g.ask(ctx, call, c, paths, rule, next)
	}
	if g.modeAllows(call, c) {
		return allow("mode " + string(g.opts.Mode))
	}
	return g.ask(ctx, call, c, paths, nil, next)
}

func (r *Rule) by() string { return "rule " + quote(r.Text) }

func quote(s string) string { return `"` + s + `"` }

// modeAllows reports whether the mode lets a call no rule decides run.
func (g *Guard) modeAllows(call *host.Call, c Call) bool {
	switch g.opts.Mode {
	case ModeAuto:
		return true
	case ModeEdits:
		if EditTools[call.Tool] && call.Builtin && len(c.Paths) > 0 && inside(c.Paths, call.Roots) {
			return true
		}
	}
	return call.Builtin && call.Annotations.ReadOnly
}

// ask asks the session's approver about call, which rule (nil: the mode)
// asks about, and runs it through next if the answer allows it.
func (g *Guard) ask(ctx context.Context, call *host.Call, c Call, paths []string, rule *Rule, next host.Handler) host.Result {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	if s == nil {
		s = g.session
	}
	why := "mode " + string(g.opts.Mode)
	if rule != nil {
		why = rule.by()
	}
	// One question at a time in a session: a call waits for the
	// questions before it, whose answers may allow it too. The lock is
	// let go before the call runs, so that the calls allowed run in
	// parallel.
	s.askMu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			s.askMu.Unlock()
		}
	}
	defer unlock()
	if text, ok := s.allows(c, rule); ok {
		unlock()
		call.Decision = &host.Decision{Allowed: true, By: "the user, for the session (" + quote(text) + ")"}
		return next(ctx, call)
	}
	req := &Request{Call: call, Paths: paths, Rule: rule, Mode: g.opts.Mode, Why: why, SessionRules: sessionRules(call, c, rule)}
	if ans, ok := ctx.Value(answerKey{}).(Answer); ok {
		unlock()
		return g.answered(ctx, call, s, rule, req, ans, next)
	}
	if s.approver == nil {
		unlock()
		call.Decision = &host.Decision{By: "no one to ask (" + why + ")"}
		text := g.unattended(call, c, rule)
		if g.opts.Logger != nil {
			g.opts.Logger.Warn("denied a call that needs approval: no one can be asked", "tool", call.Tool, "asked_by", why, "told", text)
		}
		return host.Denied(call.Tool, text)
	}
	req.Preview = g.preview(ctx, req)
	ans, err := s.approver.Approve(ctx, req)
	unlock()
	switch {
	// An answer that comes once the call's context has ended allows
	// nothing; a denial given as it ended (Ctrl-C at the question) is
	// the user's.
	case ctx.Err() != nil && (err != nil || ans.Verdict != Refuse):
		call.Decision = &host.Decision{By: "no answer (" + why + ")"}
		return host.Denied(call.Tool, "denied: no answer came before the call's deadline")
	case err != nil:
		call.Decision = &host.Decision{By: "no answer (" + why + ")", Reason: err.Error()}
		return host.Denied(call.Tool, "denied: the approval failed: "+err.Error())
	}
	return g.answered(ctx, call, s, rule, req, ans, next)
}

// answered runs call, or answers it, as ans says.
func (g *Guard) answered(ctx context.Context, call *host.Call, s *Session, rule *Rule, req *Request, ans Answer, next host.Handler) host.Result {
	switch ans.Verdict {
	case Later:
		if d, ok := ctx.Value(deferralsKey{}).(*Deferrals); ok {
			d.mu.Lock()
			d.calls = append(d.calls, Deferred{Call: call, Why: req.Why, SessionRules: req.SessionRules})
			d.mu.Unlock()
			call.Decision = &host.Decision{By: "put off by the user (" + req.Why + ")"}
			return host.Denied(call.Tool, "waiting for the user's approval")
		}
		call.Decision = &host.Decision{By: "put off by the user (" + req.Why + ")"}
		return host.Denied(call.Tool, "denied: the question was put off, and nothing here can take the answer later")
	case AllowSession:
		s.add(rule, req.SessionRules)
		call.Decision = &host.Decision{Allowed: true, By: "the user, for the session"}
		return next(ctx, call)
	case AllowOnce:
		call.Decision = &host.Decision{Allowed: true, By: "the user"}
		return next(ctx, call)
	}
	reason := strings.TrimSpace(ans.Reason)
	call.Decision = &host.Decision{By: "the user", Reason: reason}
	if reason != "" {
		return host.Denied(call.Tool, "denied by the user: "+reason)
	}
	return host.Denied(call.Tool, "denied by the user")
}

// unattended is the denial of a call to ask about when no one can be
// asked: what asked, and what would let such calls run.
func (g *Guard) unattended(call *host.Call, c Call, rule *Rule) string {
	if rule != nil {
		return fmt.Sprintf("needs approval (the rule %s asks for it) and there is no one here to give it; it cannot run unattended while that ask rule stands", quote(rule.Text))
	}
	hint := "add the allow rule " + quote(allowHint(call, c)) + " (--allow, or \"permissions\" in the configuration)"
	if g.opts.Mode == ModeAsk && EditTools[call.Tool] && call.Builtin && inside(c.Paths, call.Roots) {
		hint += ", or use --approval edits"
	}
	return fmt.Sprintf("needs approval (mode %s) and there is no one here to give it; to let such calls run, %s", g.opts.Mode, hint)
}

// allowHint is an allow rule that would let c run: the path of a file
// tool's call, the commands of a command line, else the tool.
func allowHint(call *host.Call, c Call) string {
	switch {
	case c.isBash():
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(c.Args, &in)
		if cmds, err := commands(in.Command); err == nil && len(cmds) == 1 && !cmds[0].writes && !cmds[0].opaque && !strings.Contains(cmds[0].line, dynamic) {
			return BashTool + "(" + cmds[0].line + ")"
		}
	case c.isFile() && len(c.Paths) == 1:
		p := c.Paths[0]
		if rel, err := filepath.Rel(c.Root, p); err == nil && filepath.IsLocal(rel) {
			p = rel
		}
		return call.Tool + "(" + p + ")"
	}
	if strings.HasPrefix(call.Source, "mcp:") {
		return call.Source + "/" + call.Tool
	}
	return call.Tool
}

// sessionRules are the rules an AllowSession answer adds when the mode
// asked (an ask rule answered so is itself remembered): for a command
// line, each command's program and subcommand (git status:*), none when
// one writes a file or runs a script that cannot be read; for any other
// tool, the tool.
func sessionRules(call *host.Call, c Call, rule *Rule) []string {
	if rule != nil {
		return []string{rule.Text}
	}
	if !c.isBash() {
		if strings.HasPrefix(call.Source, "mcp:") {
			return []string{call.Source + "/" + call.Tool}
		}
		return []string{call.Tool}
	}
	var in struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(c.Args, &in)
	cmds, err := commands(in.Command)
	if err != nil || len(cmds) == 0 {
		return nil
	}
	var out []string
	for _, cmd := range cmds {
		words := strings.Fields(cmd.line)
		if cmd.writes || cmd.opaque || len(words) == 0 || strings.Contains(words[0], dynamic) || strings.ContainsAny(words[0], "*?") {
			return nil
		}
		prefix := words[0]
		if len(words) > 1 && subcommand(words[1]) {
			prefix += " " + words[1]
		}
		out = append(out, BashTool+"("+prefix+":*)")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subcommand reports whether a command's second word names a
// subcommand (git status, npm test) rather than an option or a file.
func subcommand(w string) bool {
	if w == "" || w[0] == '-' {
		return false
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':') {
			return false
		}
	}
	return true
}

type typedKey struct{}

// Typed returns a context whose calls a person made (a command they
// typed, not a model's call): they run unless a deny rule matches.
func Typed(ctx context.Context) context.Context {
	return context.WithValue(ctx, typedKey{}, true)
}

type previewKey struct{}

// ForPreview returns a context in which a dry run of the built-in
// edit_file (dry_run true: it writes nothing, and answers the diff the
// edits would make) runs without being asked about: a Preview function
// makes its diff so, while the call it previews waits for its answer.
func ForPreview(ctx context.Context) context.Context {
	return context.WithValue(ctx, previewKey{}, true)
}

func isDryRun(call *host.Call) bool {
	if call.Tool != "edit_file" || !call.Builtin {
		return false
	}
	var in struct {
		DryRun bool `json:"dry_run"`
	}
	return json.Unmarshal(call.Args, &in) == nil && in.DryRun
}

// preview is what the approver shows of req's call.
func (g *Guard) preview(ctx context.Context, req *Request) string {
	if g.opts.Preview != nil {
		if p := g.opts.Preview(ctx, req); p != "" {
			return p
		}
	}
	return DefaultPreview(req.Call)
}

// DefaultPreview shows a call's arguments: run_bash's command as it
// would run, any other call's arguments indented, one per line.
func DefaultPreview(call *host.Call) string {
	var args map[string]any
	if json.Unmarshal(call.Args, &args) != nil {
		return string(call.Args)
	}
	if cmd, ok := args["command"].(string); ok && call.Tool == BashTool {
		return "$ " + cmd
	}
	out, err := json.MarshalIndent(args, "", "  ")
	if err != nil {
		return string(call.Args)
	}
	return string(out)
}

// policyCall is what the policy reads of call: its path arguments, for a
// file tool, resolved against its roots.
func (g *Guard) policyCall(call *host.Call) (Call, []string) {
	c := Call{Tool: call.Tool, Source: call.Source, Args: call.Args}
	if len(call.Roots) > 0 {
		c.Root = call.Roots[0]
	}
	if !c.isFile() {
		return c, nil
	}
	given := PathArgs(call.Tool, call.Args)
	real := g.realRoots(call.Roots)
	var resolved []string
	for _, p := range given {
		lexical, r := place(call.Roots, real, p)
		c.Paths = append(c.Paths, lexical, r)
		resolved = append(resolved, r)
	}
	slices.Sort(c.Paths)
	c.Paths = slices.Compact(c.Paths)
	return c, resolved
}

// PathArgs returns the path arguments of a file tool's call: path,
// paths, source and destination; a tool that defaults to the first root
// (list_dir, search_*) with no path gets ".".
func PathArgs(tool string, args json.RawMessage) []string {
	var in struct {
		Path        *string  `json:"path"`
		Paths       []string `json:"paths"`
		Source      *string  `json:"source"`
		Destination *string  `json:"destination"`
	}
	_ = json.Unmarshal(args, &in)
	var out []string
	for _, p := range []*string{in.Path, in.Source, in.Destination} {
		if p != nil {
			out = append(out, *p)
		}
	}
	out = append(out, in.Paths...)
	if len(out) == 0 {
		out = []string{"."}
	}
	return out
}

// ResolvePaths returns what rules match for the paths given: each path
// made absolute against the first root and cleaned (".." removed), and
// again with its symbolic links followed, as far as it exists. A path
// whose real place is inside a root is given through that root as the
// host knows it, so that a rule relative to the first root matches it.
// A rule must allow every path of the list; a deny or ask rule matching
// any one of them decides.
func ResolvePaths(roots, paths []string) []string {
	real := realRoots(roots)
	var out []string
	for _, p := range paths {
		lexical, r := place(roots, real, p)
		out = append(out, lexical, r)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// realRoots are the roots with their symbolic links followed, as found
// the first time each was seen.
func (g *Guard) realRoots(roots []string) []string {
	out := make([]string, len(roots))
	for i, root := range roots {
		if real, ok := g.roots.Load(root); ok {
			out[i] = real.(string)
			continue
		}
		out[i] = followExisting(root)
		g.roots.Store(root, out[i])
	}
	return out
}

// realRoots are the roots with their symbolic links followed.
func realRoots(roots []string) []string {
	out := make([]string, len(roots))
	for i, root := range roots {
		out[i] = followExisting(root)
	}
	return out
}

// place returns p made absolute against the first root and cleaned, and
// the same with its symbolic links followed as far as it exists, given
// through the root that holds it (real are the roots' real paths).
func place(roots, real []string, p string) (lexical, resolved string) {
	if !filepath.IsAbs(p) && len(roots) > 0 {
		p = filepath.Join(roots[0], p)
	}
	lexical = filepath.Clean(p)
	resolved = followExisting(lexical)
	for i, root := range roots {
		if rel, err := filepath.Rel(real[i], resolved); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return lexical, filepath.Join(root, rel)
		}
	}
	return lexical, resolved
}

// unresolved marks a path whose links could not be followed.
const unresolved = "\x00unresolved:"

// followExisting follows the symbolic links of p, an absolute clean
// path, one component at a time, as the file tools do: a link's target
// takes its place (a dangling link's too, since a write through it
// creates the target), and the first component that does not exist ends
// the walk, the rest appended as it is. A path that cannot be followed
// (more than 40 links, Linux's limit; a link that cannot be read) is
// unresolved: no glob matches it, so no rule allows it, and the mode
// asks.
func followExisting(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	done := "/"
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, name)
		info, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...)
		}
		if info.Mode()&os.ModeSymlink == 0 {
			done = next
			continue
		}
		if hops++; hops > 40 {
			return unresolved + p
		}
		target, err := os.Readlink(next)
		if err != nil {
			return unresolved + p
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done
}

// inside reports whether every path lies inside one of the roots (or is
// one).
func inside(paths, roots []string) bool {
	for _, p := range paths {
		in := false
		for _, root := range roots {
			if rel, err := filepath.Rel(root, p); err == nil && (rel == "." || filepath.IsLocal(rel)) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
}
