package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/sdk"
)

// bench is a registry of in-process tools named as the built-ins are, each
// counting its runs, under a guard.
type bench struct {
	reg  *host.ToolRegistry
	root string
	ran  map[string]*atomic.Int64
}

type anyIn struct {
	Path        string   `json:"path,omitempty"`
	Paths       []string `json:"paths,omitempty"`
	Source      string   `json:"source,omitempty"`
	Destination string   `json:"destination,omitempty"`
	Command     string   `json:"command,omitempty"`
	Content     string   `json:"content,omitempty"`
	SQL         string   `json:"sql,omitempty"`
	DryRun      bool     `json:"dry_run,omitempty"`
}

func newBench(t testing.TB, p *policy.Policy, opts policy.Options) *bench {
	t.Helper()
	b := &bench{root: t.TempDir(), ran: map[string]*atomic.Int64{}}
	var reg *host.ToolRegistry
	guard := policy.NewGuard(p, opts)
	reg = host.NewToolRegistry(&host.Options{Roots: []string{b.root}, Interceptors: []host.Interceptor{guard.Intercept}})
	for _, tool := range []struct {
		name     string
		readOnly bool
	}{{"read_file", true}, {"write_file", false}, {"edit_file", false}, {"move", false}, {"run_bash", false}, {"query", false}} {
		n := &atomic.Int64{}
		b.ran[tool.name] = n
		err := reg.Register(sdk.NewTool(sdk.Info{Name: tool.name, Description: "Test.", Annotations: sdk.Annotations{ReadOnly: tool.readOnly}},
			func(ctx context.Context, in anyIn) (string, error) {
				n.Add(1)
				return "ran " + tool.name, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
	}
	b.reg = reg
	return b
}

func (b *bench) call(ctx context.Context, tool string, args any) string {
	raw, _ := json.Marshal(args)
	return b.reg.Execute(ctx, tool, raw)
}

// asker is an approver that answers from a script and records what it
// was asked.
type asker struct {
	mu     sync.Mutex
	asked  []*policy.Request
	answer func(*policy.Request) policy.Answer
}

func (a *asker) Approve(ctx context.Context, req *policy.Request) (policy.Answer, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req)
	a.mu.Unlock()
	return a.answer(req), nil
}

func (a *asker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

func answer(v policy.Verdict, reason string) func(*policy.Request) policy.Answer {
	return func(*policy.Request) policy.Answer { return policy.Answer{Verdict: v, Reason: reason} }
}

func mustRules(t *testing.T, allow, ask, deny []string) *policy.Policy {
	t.Helper()
	p := &policy.Policy{}
	for _, l := range []struct {
		e     policy.Effect
		rules []string
	}{{policy.Allow, allow}, {policy.Ask, ask}, {policy.Deny, deny}} {
		for _, r := range l.rules {
			if err := p.Add(l.e, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

func TestModeAskAsksAllButReadOnly(t *testing.T) {
	ap := &asker{answer: answer(policy.Refuse, "not now")}
	b := newBench(t, nil, policy.Options{Mode: policy.ModeAsk, Approver: ap})
	ctx := context.Background()

	if got := b.call(ctx, "read_file", anyIn{Path: "a"}); got != "ran read_file" || ap.count() != 0 {
		t.Fatalf("read-only call: %q, %d questions", got, ap.count())
	}
	got := b.call(ctx, "write_file", anyIn{Path: "a", Content: "x"})
	if want := "Error executing write_file: denied by the user: not now"; got != want || b.ran["write_file"].Load() != 0 {
		t.Fatalf("denied write: %q (want %q), ran %d times", got, want, b.ran["write_file"].Load())
	}
	req := ap.asked[0]
	if req.Why != "mode ask" || req.Rule != nil || req.Call.Tool != "write_file" || len(req.Paths) != 1 || req.Paths[0] != filepath.Join(b.root, "a") {
		t.Fatalf("the question: %+v", req)
	}
	if !strings.Contains(req.Preview, `"content": "x"`) {
		t.Errorf("preview %q does not show the arguments", req.Preview)
	}

	ap.answer = answer(policy.AllowOnce, "")
	if got := b.call(ctx, "write_file", anyIn{Path: "a"}); got != "ran write_file" {
		t.Fatalf("allowed once: %q", got)
	}
	if got := b.call(ctx, "write_file", anyIn{Path: "a"}); got != "ran write_file" || ap.count() != 3 {
		t.Fatalf("a second call is asked again: %q after %d questions", got, ap.count())
	}

	ap.answer = answer(policy.AllowSession, "")
	b.call(ctx, "run_bash", anyIn{Command: "git status -s && go test ./..."})
	if rules := ap.asked[3].SessionRules; strings.Join(rules, " ") != "run_bash(git status:*) run_bash(go test:*)" {
		t.Fatalf("session rules offered for a command line: %q", rules)
	}
	ap.answer = answer(policy.Refuse, "")
	for _, line := range []string{"git status", "go test ./host", "git status; go test -run X ."} {
		if got := b.call(ctx, "run_bash", anyIn{Command: line}); got != "ran run_bash" {
			t.Errorf("%q after allow-for-session: %q", line, got)
		}
	}
	if ap.count() != 4 {
		t.Fatalf("calls the session allows were asked: %d questions", ap.count())
	}
	if got := b.call(ctx, "run_bash", anyIn{Command: "git status; rm -rf x"}); got != "Error executing run_bash: denied by the user" {
		t.Fatalf("a line with a command the session did not allow: %q", got)
	}
}

func TestModeEditsRunsFileChangesInsideTheRoots(t *testing.T) {
	ap := &asker{answer: answer(policy.Refuse, "")}
	b := newBench(t, nil, policy.Options{Mode: policy.ModeEdits, Approver: ap})
	ctx := context.Background()
	if got := b.call(ctx, "write_file", anyIn{Path: "src/a.go"}); got != "ran write_file" {
		t.Fatalf("an edit inside the roots: %q", got)
	}
	if got := b.call(ctx, "move", anyIn{Source: "a", Destination: "b/c"}); got != "ran move" {
		t.Fatalf("a move inside the roots: %q", got)
	}
	outside := filepath.Join(t.TempDir(), "x")
	for _, c := range []struct {
		tool string
		args anyIn
	}{
		{"write_file", anyIn{Path: outside}},
		{"write_file", anyIn{Path: "../escape"}},
		{"move", anyIn{Source: "a", Destination: outside}},
		{"run_bash", anyIn{Command: "ls"}},
		{"query", anyIn{SQL: "SELECT 1"}},
	} {
		if got := b.call(ctx, c.tool, c.args); got != "Error executing "+c.tool+": denied by the user" {
			t.Errorf("%s %+v in mode edits: %q", c.tool, c.args, got)
		}
	}
	if ap.count() != 5 {
		t.Fatalf("%d questions, want 5", ap.count())
	}
}

func TestRulesBeforeTheMode(t *testing.T) {
	ap := &asker{answer: answer(policy.AllowOnce, "")}
	p := mustRules(t,
		[]string{"run_bash(git *)", "write_file(src/**)"},
		[]string{"run_bash(git push*)", "query(sql=DROP*)"},
		[]string{"write_file(**/.env)", "run_bash(rm -rf *)"})
	b := newBench(t, p, policy.Options{Mode: policy.ModeAuto, Approver: ap})
	ctx := context.Background()

	if got := b.call(ctx, "run_bash", anyIn{Command: "git log; rm -rf /"}); got != `Error executing run_bash: denied by rule "run_bash(rm -rf *)"` {
		t.Fatalf("deny: %q", got)
	}
	if got := b.call(ctx, "write_file", anyIn{Path: "src/.env"}); got != `Error executing write_file: denied by rule "write_file(**/.env)"` {
		t.Fatalf("deny beats allow: %q", got)
	}
	if got := b.call(ctx, "run_bash", anyIn{Command: "git push origin main"}); got != "ran run_bash" || ap.count() != 1 || ap.asked[0].Why != `rule "run_bash(git push*)"` {
		t.Fatalf("an ask rule in mode auto: %q, %d questions", got, ap.count())
	}
	if got := b.call(ctx, "query", anyIn{SQL: "SELECT 1"}); got != "ran query" || ap.count() != 1 {
		t.Fatalf("mode auto: %q, %d questions", got, ap.count())
	}

	// A person's own call: only deny rules stop it.
	typed := newBench(t, p, policy.Options{Mode: policy.ModeAsk, Typed: true})
	if got := typed.call(ctx, "run_bash", anyIn{Command: "git push"}); got != "ran run_bash" {
		t.Fatalf("a typed call an ask rule matches: %q", got)
	}
	if got := typed.call(ctx, "run_bash", anyIn{Command: "rm -rf build"}); !strings.Contains(got, "denied by rule") {
		t.Fatalf("a typed call a deny rule matches: %q", got)
	}
}

func TestAllowForTheSessionOfAnAskRule(t *testing.T) {
	ap := &asker{answer: answer(policy.AllowSession, "")}
	p := mustRules(t, nil, []string{"query(sql=DROP*)"}, nil)
	b := newBench(t, p, policy.Options{Mode: policy.ModeAuto, Approver: ap})
	ctx := context.Background()
	b.call(ctx, "query", anyIn{SQL: "DROP TABLE a"})
	if got := b.call(ctx, "query", anyIn{SQL: "DROP TABLE b"}); got != "ran query" || ap.count() != 1 {
		t.Fatalf("the same ask rule after allow-for-session: %q, %d questions", got, ap.count())
	}

	// Another session has its own answers.
	other := &asker{answer: answer(policy.Refuse, "")}
	octx := policy.WithSession(ctx, policy.NewSession(other))
	if got := b.call(octx, "query", anyIn{SQL: "DROP TABLE c"}); !strings.Contains(got, "denied by the user") || other.count() != 1 {
		t.Fatalf("another session: %q, %d questions", got, other.count())
	}
	if rules := b.reg.Tools(); len(rules) == 0 {
		t.Fatal("no tools")
	}
}

func TestPathRulesFollowLinksAndDots(t *testing.T) {
	ap := &asker{answer: answer(policy.Refuse, "")}
	p := mustRules(t, []string{"read_file(src/**)", "write_file(src/**)"}, nil, []string{"read_file(secret/**)", "write_file(secret/**)"})
	b := newBench(t, p, policy.Options{Mode: policy.ModeAsk, Approver: ap})
	for _, d := range []string{"src", "secret"} {
		if err := os.Mkdir(filepath.Join(b.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	mustLink := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(b.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(filepath.Join(b.root, "secret"), "src/shortcut")
	mustLink(outside, "src/out")
	// A dangling link: a write through it creates its target.
	mustLink("../secret/new.txt", "src/fresh")
	mustLink("loop", "src/loop")
	ctx := context.Background()
	for _, c := range []struct {
		tool, path, want string
	}{
		{"read_file", "src/shortcut/key", `Error executing read_file: denied by rule "read_file(secret/**)"`},
		{"read_file", "src/../secret/key", `Error executing read_file: denied by rule "read_file(secret/**)"`},
		{"read_file", filepath.Join(b.root, "secret", "key"), `Error executing read_file: denied by rule "read_file(secret/**)"`},
		{"write_file", "src/new/file.go", "ran write_file"},
		{"write_file", "src/../x", "Error executing write_file: denied by the user"},
		{"write_file", "src/out/x", "Error executing write_file: denied by the user"},
		{"write_file", "src/shortcut/x", `Error executing write_file: denied by rule "write_file(secret/**)"`},
		{"write_file", "src/fresh", `Error executing write_file: denied by rule "write_file(secret/**)"`},
		{"write_file", "src/loop", "Error executing write_file: denied by the user"},
	} {
		if got := b.call(ctx, c.tool, anyIn{Path: c.path}); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.tool, c.path, got, c.want)
		}
	}
	// Both ends of a move.
	p2 := mustRules(t, []string{"move(src/**)"}, nil, nil)
	m := newBench(t, p2, policy.Options{Mode: policy.ModeAsk, Approver: ap})
	if got := m.call(ctx, "move", anyIn{Source: "src/a", Destination: "src/b"}); got != "ran move" {
		t.Errorf("a move inside src: %q", got)
	}
	if got := m.call(ctx, "move", anyIn{Source: "src/a", Destination: "elsewhere"}); got != "Error executing move: denied by the user" {
		t.Errorf("a move out of src: %q", got)
	}
}

func TestNoOneToAsk(t *testing.T) {
	var logged strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Output: &logged})
	b := newBench(t, mustRules(t, nil, []string{"run_bash(git push*)"}, nil), policy.Options{Mode: policy.ModeAsk, Logger: logger})
	ctx := context.Background()
	got := b.call(ctx, "write_file", anyIn{Path: "notes.txt"})
	want := `Error executing write_file: needs approval (mode ask) and there is no one here to give it; to let such calls run, add the allow rule "write_file(notes.txt)" (--allow, or "permissions" in the configuration), or use --approval edits`
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := b.call(ctx, "run_bash", anyIn{Command: "make test"}); !strings.Contains(got, `add the allow rule "run_bash(make test)"`) {
		t.Fatalf("a command: %q", got)
	}
	if got := b.call(ctx, "run_bash", anyIn{Command: "git push"}); !strings.Contains(got, `the rule "run_bash(git push*)" asks for it`) {
		t.Fatalf("an ask rule: %q", got)
	}
	if !strings.Contains(logged.String(), "no one can be asked") || b.ran["write_file"].Load()+b.ran["run_bash"].Load() != 0 {
		t.Fatalf("log %q; tools ran", logged.String())
	}
}

func TestNoAnswerBeforeTheDeadline(t *testing.T) {
	ap := policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		<-ctx.Done()
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	b := newBench(t, nil, policy.Options{Mode: policy.ModeAsk, Approver: ap})
	if err := b.reg.SetTimeout("write_file", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got := b.call(ctx, "write_file", anyIn{Path: "a"})
	if got != "Error executing write_file: denied: no answer came before the call's deadline" || b.ran["write_file"].Load() != 0 {
		t.Fatalf("%q, ran %d", got, b.ran["write_file"].Load())
	}
}

func TestPreviewDryRunIsNotAsked(t *testing.T) {
	ap := &asker{answer: answer(policy.Refuse, "")}
	var reg *host.ToolRegistry
	var previewed string
	opts := policy.Options{Mode: policy.ModeAsk, Approver: ap, Preview: func(ctx context.Context, req *policy.Request) string {
		var args map[string]any
		_ = json.Unmarshal(req.Call.Args, &args)
		args["dry_run"] = true
		raw, _ := json.Marshal(args)
		previewed = reg.Execute(policy.ForPreview(ctx), "edit_file", raw)
		return previewed
	}}
	b := newBench(t, nil, opts)
	reg = b.reg
	got := b.call(context.Background(), "edit_file", anyIn{Path: "a"})
	if got != "Error executing edit_file: denied by the user" || previewed != "ran edit_file" || ap.count() != 1 || ap.asked[0].Preview != "ran edit_file" {
		t.Fatalf("%q; preview %q; %d questions", got, previewed, ap.count())
	}
	// Without the preview context, a dry run is a call like any other.
	if got := b.call(context.Background(), "edit_file", anyIn{Path: "a", DryRun: true}); got != "Error executing edit_file: denied by the user" {
		t.Fatalf("a dry run outside a preview: %q", got)
	}
}

// BenchmarkGuard is the policy's cost per call through a registry: a call
// of an in-process tool with no interceptor, then under a guard of 100
// rules, for a tool decided by an argument rule, a file tool (its path
// resolved on disk) and a command line.
func BenchmarkGuard(b *testing.B) {
	p := &policy.Policy{}
	for i := range 100 {
		_ = p.Add(policy.Allow, fmt.Sprintf("tool_%d(arg=value%d*)", i, i))
	}
	for _, r := range []string{"query(sql=SELECT*)", "write_file(src/**)", "run_bash(git status*)", "run_bash(ls*)", "run_bash(grep *)"} {
		_ = p.Add(policy.Allow, r)
	}
	_ = p.Add(policy.Deny, "read_file(**/.env)")
	plain := newBench(b, nil, policy.Options{Mode: policy.ModeAuto})
	plain.reg = host.NewToolRegistry(&host.Options{Roots: []string{plain.root}})
	_ = plain.reg.Register(sdk.NewTool(sdk.Info{Name: "query", Description: "Test."}, func(ctx context.Context, in anyIn) (string, error) { return "ok", nil }))
	guarded := newBench(b, p, policy.Options{Mode: policy.ModeAsk})
	if err := os.MkdirAll(filepath.Join(guarded.root, "src", "pkg"), 0o755); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, tool string
		b          *bench
		args       json.RawMessage
	}{
		{"no interceptor", "query", plain, json.RawMessage(`{"sql":"SELECT 1"}`)},
		{"argument rule", "query", guarded, json.RawMessage(`{"sql":"SELECT 1"}`)},
		{"path rule", "write_file", guarded, json.RawMessage(`{"path":"src/pkg/a.go","content":"x"}`)},
		{"command line", "run_bash", guarded, json.RawMessage(`{"command":"git status --short && ls -la | grep foo"}`)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if got := c.b.reg.Execute(ctx, c.tool, c.args); strings.HasPrefix(got, "Error") {
					b.Fatal(got)
				}
			}
		})
	}
}

// TestSessionsAskApart: a question open in one session holds back the
// next questions of that session only.
func TestSessionsAskApart(t *testing.T) {
	b := newBench(t, nil, policy.Options{Mode: policy.ModeAsk})
	release := make(chan struct{})
	asked := make(chan struct{})
	slow := policy.NewSession(policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		close(asked)
		<-release
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	}))
	quick := policy.NewSession(policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	}))
	ctx := context.Background()
	done := make(chan string)
	go func() { done <- b.call(policy.WithSession(ctx, slow), "write_file", anyIn{Path: "a"}) }()
	<-asked
	if got := b.call(policy.WithSession(ctx, quick), "write_file", anyIn{Path: "b"}); got != "ran write_file" {
		t.Fatalf("the other session: %q", got)
	}
	close(release)
	if got := <-done; got != "ran write_file" {
		t.Fatalf("the slow session: %q", got)
	}
}
