package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/sdk"
)

// regTool is an in-process fake tool. Its schema names schemaName (default
// name), has type schemaType (default "function") and parameters params
// (default an object schema without properties). run is what Execute does;
// by default it echoes its arguments.
type regTool struct {
	name        string
	description string
	schemaName  string
	schemaType  string
	params      string
	run         func(ctx context.Context, args json.RawMessage) (string, error)
}

func (f *regTool) Name() string { return f.name }

func (f *regTool) Schema() ChatTool {
	s := sdk.NewChatTool(f.name, f.description, json.RawMessage(`{"type":"object"}`))
	if f.schemaName != "" {
		s.Function.Name = f.schemaName
	}
	if f.schemaType != "" {
		s.Type = f.schemaType
	}
	if f.params != "" {
		s.Function.Parameters = json.RawMessage(f.params)
	}
	return s
}

func (f *regTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	if f.run == nil {
		return f.name + ": " + string(args), nil
	}
	return f.run(ctx, args)
}

// regAnnotatedTool is a regTool with annotations.
type regAnnotatedTool struct {
	regTool
	ann Annotations
}

func (a *regAnnotatedTool) Annotations() Annotations { return a.ann }

var (
	_ ExecutableTool = (*regTool)(nil)
	_ sdk.Annotator  = (*regAnnotatedTool)(nil)
)

// newReg returns a registry that logs nowhere.
func newReg(t *testing.T, opts *Options) *ToolRegistry {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return NewToolRegistry(opts)
}

// mustRegister registers tools that must be accepted.
func mustRegister(t *testing.T, r *ToolRegistry, tools ...ExecutableTool) {
	t.Helper()
	for _, tool := range tools {
		if err := r.Register(tool); err != nil {
			t.Fatalf("Register(%s): %v", tool.Name(), err)
		}
	}
}

func simple(name string) *regTool {
	return &regTool{name: name, description: "The " + name + " tool."}
}

func optIn(name string) *regAnnotatedTool {
	return &regAnnotatedTool{regTool: *simple(name), ann: Annotations{Destructive: true, OptIn: true}}
}

// regPathParams requires one string property, path, and nothing else.
const regPathParams = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

func TestRegistryRegisterEnablesByDefault(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("echo"))

	if !r.HasTool("echo") {
		t.Error("HasTool(echo) = false after Register")
	}
	if !r.IsToolEnabled("echo") {
		t.Error("IsToolEnabled(echo) = false: a registered tool is enabled by default")
	}
	if got := r.Execute(t.Context(), "echo", json.RawMessage(`{"a":1}`)); got != `echo: {"a":1}` {
		t.Errorf("Execute(echo) = %q, want the tool's result", got)
	}
	tool, ok := r.Tool("echo")
	if !ok || tool.Name() != "echo" {
		t.Errorf("Tool(echo) = %v, %v; want the registered tool", tool, ok)
	}
	if _, ok := r.Tool("nope"); ok {
		t.Error("Tool(nope) found a tool")
	}
}

func TestRegistryOptInToolsRegisterDisabled(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	typedOptIn := sdk.NewTool(sdk.Info{Name: "run_bash", Annotations: sdk.Annotations{OpenWorld: true, OptIn: true}},
		func(context.Context, struct{}) (string, error) { return "ran", nil })
	mustRegister(t, r, optIn("remove"), typedOptIn, simple("read"))

	for name, want := range map[string]bool{"remove": false, "run_bash": false, "read": true} {
		if got := r.IsToolEnabled(name); got != want {
			t.Errorf("IsToolEnabled(%s) = %v, want %v", name, got, want)
		}
		if !r.HasTool(name) {
			t.Errorf("HasTool(%s) = false", name)
		}
	}
	if got, want := regSchemaNames(r), []string{"read"}; !slices.Equal(got, want) {
		t.Errorf("EnabledSchemas names = %v, want %v", got, want)
	}
	if err := r.Enable("run_bash"); err != nil {
		t.Fatal(err)
	}
	if got := r.Execute(t.Context(), "run_bash", nil); got != "ran" {
		t.Errorf("Execute(run_bash) after Enable = %q, want %q", got, "ran")
	}
}

func TestRegistryRegisterDuplicate(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	first := &regTool{name: "echo", run: func(context.Context, json.RawMessage) (string, error) { return "first", nil }}
	second := &regTool{name: "echo", run: func(context.Context, json.RawMessage) (string, error) { return "second", nil }}
	mustRegister(t, r, first)

	err := r.Register(second)
	if !errors.Is(err, ErrToolExists) {
		t.Fatalf("Register of a duplicate: error %v, want ErrToolExists", err)
	}
	if want := "tool already exists: echo (register it under a different name, such as echo_v2)"; err.Error() != want {
		t.Errorf("duplicate error:\n got %q\nwant %q", err.Error(), want)
	}
	if got := r.Execute(t.Context(), "echo", nil); got != "first" {
		t.Errorf("after a refused duplicate Execute(echo) = %q, want the first tool's %q", got, "first")
	}
	if got := r.ToolNames(); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("ToolNames = %v, want [echo]", got)
	}

	// A disabled tool still holds its name.
	if err := r.Disable("echo"); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(second); !errors.Is(err, ErrToolExists) {
		t.Errorf("Register over a disabled tool: error %v, want ErrToolExists", err)
	}
}

func TestRegistryRegisterRefusesInvalidTools(t *testing.T) {
	t.Parallel()
	tests := map[string]ExecutableTool{
		"empty name":               &regTool{name: ""},
		"name with a space":        &regTool{name: "a b"},
		"name with a dot":          &regTool{name: "a.b"},
		"non-ASCII name":           &regTool{name: "é"},
		"65-character name":        &regTool{name: strings.Repeat("n", 65)},
		"schema names another":     &regTool{name: "real", schemaName: "other"},
		"schema is not a function": &regTool{name: "kind", schemaType: "tool"},
		"string parameters":        &regTool{name: "p1", params: `{"type":"string"}`},
		"array parameters":         &regTool{name: "p2", params: `{"type":"array","items":{"type":"string"}}`},
		"untyped parameters":       &regTool{name: "p3", params: `{"properties":{"a":{"type":"string"}}}`},
		"boolean schema":           &regTool{name: "p4", params: `true`},
		"parameters not JSON":      &regTool{name: "p5", params: `{"type":`},
		"parameters an array":      &regTool{name: "p6", params: `[]`},
		"no parameters":            &regNoParamsTool{regTool{name: "p7"}},
	}
	for name, tool := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newReg(t, nil)
			err := r.Register(tool)
			if !errors.Is(err, ErrInvalidTool) {
				t.Fatalf("Register: error %v, want ErrInvalidTool", err)
			}
			if r.HasTool(tool.Name()) || len(r.ToolNames()) != 0 {
				t.Errorf("a refused tool was registered: %v", r.ToolNames())
			}
		})
	}
}

// regNoParamsTool has a schema without parameters.
type regNoParamsTool struct{ regTool }

func (n *regNoParamsTool) Schema() ChatTool {
	s := n.regTool.Schema()
	s.Function.Parameters = nil
	return s
}

func TestRegistryUnregister(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("a"), simple("b"), optIn("c"), simple("d"))

	r.Unregister("b")
	if r.HasTool("b") || r.IsToolEnabled("b") {
		t.Error("b is still registered after Unregister")
	}
	if got := r.Execute(t.Context(), "b", nil); got != "Error: tool not found: b" {
		t.Errorf("Execute(b) after Unregister = %q", got)
	}
	if got, want := r.ToolNames(), []string{"a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("ToolNames after Unregister(b) = %v, want %v", got, want)
	}

	// Unknown names: nothing happens.
	r.Unregister("nope")
	r.Unregister("b")
	r.Unregister("")
	if got, want := r.ToolNames(), []string{"a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("ToolNames after unregistering unknown names = %v, want %v", got, want)
	}

	// A disabled tool can be unregistered, and the name is free again; the
	// new tool goes to the end.
	r.Unregister("c")
	mustRegister(t, r, simple("c"), simple("b"))
	if got, want := r.ToolNames(), []string{"a", "d", "c", "b"}; !slices.Equal(got, want) {
		t.Errorf("ToolNames after re-registering = %v, want %v", got, want)
	}
	if !r.IsToolEnabled("c") {
		t.Error("a re-registered tool did not start enabled")
	}
}

func TestRegistryEnableDisable(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("a"), simple("b"), simple("c"))

	if err := r.Disable("b"); err != nil {
		t.Fatalf("Disable(b): %v", err)
	}
	if r.IsToolEnabled("b") || !r.HasTool("b") {
		t.Error("a disabled tool must stay registered and report disabled")
	}
	if got, want := regSchemaNames(r), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Errorf("EnabledSchemas after Disable(b) = %v, want %v", got, want)
	}
	if got, want := r.ToolNames(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("ToolNames include disabled tools: got %v, want %v", got, want)
	}
	// Disabling twice is fine.
	if err := r.Disable("b"); err != nil {
		t.Errorf("Disable(b) again: %v", err)
	}
	if err := r.Enable("b"); err != nil {
		t.Fatalf("Enable(b): %v", err)
	}
	// Enabling keeps the registration order.
	if got, want := regSchemaNames(r), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("EnabledSchemas after Enable(b) = %v, want %v", got, want)
	}
	if err := r.Enable("b"); err != nil {
		t.Errorf("Enable(b) again: %v", err)
	}
}

func TestRegistryUnknownNames(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("known"))
	ops := map[string]func(string) error{
		"Enable":     r.Enable,
		"Disable":    r.Disable,
		"SetTimeout": func(n string) error { return r.SetTimeout(n, time.Second) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := op("missing")
			if !errors.Is(err, ErrToolNotFound) {
				t.Fatalf("%s(missing): error %v, want ErrToolNotFound", name, err)
			}
			if !strings.Contains(err.Error(), "missing") {
				t.Errorf("%s(missing): error %q does not name the tool", name, err)
			}
		})
	}
	if r.HasTool("missing") || r.IsToolEnabled("missing") {
		t.Error("HasTool/IsToolEnabled report a tool that was never registered")
	}
}

func TestRegistryEnabledSchemasJSON(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r,
		&regTool{name: "read_file", description: "Read a file.", params: regPathParams},
		optIn("remove"),
		&regTool{name: "ping", description: "Ping.", params: `{"type":"object","properties":{}}`},
	)

	got, err := json.Marshal(r.EnabledSchemas())
	if err != nil {
		t.Fatal(err)
	}
	want := `[` +
		`{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":` + regPathParams + `}},` +
		`{"type":"function","function":{"name":"ping","description":"Ping.","parameters":{"type":"object","properties":{}}}}` +
		`]`
	if string(got) != want {
		t.Errorf("EnabledSchemas JSON:\n got %s\nwant %s", got, want)
	}

	one, err := json.Marshal(r.EnabledSchemas()[0])
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(one, &top); err != nil {
		t.Fatal(err)
	}
	if len(top) != 2 || string(top["type"]) != `"function"` || top["function"] == nil {
		t.Errorf("a schema's top level is %s, want exactly type and function", one)
	}
}

func TestRegistryEnabledSchemasEmpty(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, optIn("remove"))
	got, err := json.Marshal(r.EnabledSchemas())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "[]" {
		t.Errorf("EnabledSchemas with every tool disabled marshals to %s, want []", got)
	}
}

func TestRegistryToolNames(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tools []ExecutableTool
		want  []string
	}{
		"empty registry":     {nil, []string{}},
		"registration order": {[]ExecutableTool{simple("zeta"), simple("alpha"), simple("mid")}, []string{"zeta", "alpha", "mid"}},
		"disabled included":  {[]ExecutableTool{simple("a"), optIn("b"), simple("c")}, []string{"a", "b", "c"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newReg(t, nil)
			mustRegister(t, r, tc.tools...)
			got := r.ToolNames()
			if len(got) != len(tc.want) || !slices.Equal(got, tc.want) {
				t.Errorf("ToolNames = %v (len %d), want %v", got, len(got), tc.want)
			}
		})
	}
}

func TestRegistryToolNamesIsACopy(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("a"), simple("b"))
	names := r.ToolNames()
	names[0] = "changed"
	if got := r.ToolNames(); got[0] != "a" {
		t.Errorf("changing ToolNames' slice changed the registry: %v", got)
	}
}

func TestRegistryHasToolAndIsToolEnabled(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("on"), optIn("off"))
	tests := map[string]struct {
		name        string
		has, enable bool
	}{
		"enabled tool":   {"on", true, true},
		"disabled tool":  {"off", true, false},
		"unknown tool":   {"nope", false, false},
		"empty name":     {"", false, false},
		"different case": {"ON", false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := r.HasTool(tc.name); got != tc.has {
				t.Errorf("HasTool(%q) = %v, want %v", tc.name, got, tc.has)
			}
			if got := r.IsToolEnabled(tc.name); got != tc.enable {
				t.Errorf("IsToolEnabled(%q) = %v, want %v", tc.name, got, tc.enable)
			}
		})
	}
}

func TestRegistryTools(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	typed := sdk.NewTool(sdk.Info{Name: "typed", Title: "Typed tool", Description: "Typed.", Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true}},
		func(context.Context, struct{}) (string, error) { return "", nil })
	mustRegister(t, r, simple("plain"), optIn("remove"), typed)

	want := []ToolInfo{
		{Name: "plain", Description: "The plain tool.", Enabled: true},
		{Name: "remove", Description: "The remove tool.", Enabled: false, Annotations: Annotations{Destructive: true, OptIn: true}},
		{Name: "typed", Title: "Typed tool", Description: "Typed.", Enabled: true, Annotations: Annotations{ReadOnly: true, Idempotent: true}},
	}
	if got := r.Tools(); !reflect.DeepEqual(got, want) {
		t.Errorf("Tools:\n got %+v\nwant %+v", got, want)
	}
	if err := r.Enable("remove"); err != nil {
		t.Fatal(err)
	}
	if got := r.Tools(); !got[1].Enabled {
		t.Errorf("Tools after Enable(remove) = %+v, want remove enabled", got[1])
	}
}

func TestRegistryExecuteTexts(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	var ranWithBadArgs atomic.Int32
	mustRegister(t, r,
		simple("echo"),
		optIn("remove"),
		&regTool{name: "fails", run: func(context.Context, json.RawMessage) (string, error) {
			return "ignored", errors.New("disk full")
		}},
		&regTool{name: "panics", run: func(context.Context, json.RawMessage) (string, error) {
			panic("something broke")
		}},
		&regTool{name: "nilpanic", run: func(context.Context, json.RawMessage) (string, error) {
			var m map[string]int
			m["x"] = 1
			return "", nil
		}},
		&regTool{name: "strict", params: regPathParams, run: func(_ context.Context, args json.RawMessage) (string, error) {
			ranWithBadArgs.Add(1)
			return "strict: " + string(args), nil
		}},
		sdk.NewTool(sdk.Info{Name: "typed"}, func(_ context.Context, in struct {
			N int `json:"n"`
		}) (string, error) {
			return fmt.Sprint(in.N * 2), nil
		}),
	)

	tests := map[string]struct {
		tool, args, want string
	}{
		"result":              {"echo", `{"x":1}`, `echo: {"x":1}`},
		"null args are {}":    {"echo", `null`, `echo: {}`},
		"no args are {}":      {"echo", ``, `echo: {}`},
		"typed tool":          {"typed", `{"n":21}`, "42"},
		"unknown tool":        {"nope", `{}`, "Error: tool not found: nope"},
		"disabled tool":       {"remove", `{}`, "Error: tool not available: remove is disabled"},
		"tool error":          {"fails", `{}`, "Error executing fails: disk full"},
		"panic":               {"panics", `{}`, "Error executing panics: panic: something broke"},
		"runtime panic":       {"nilpanic", `{}`, "Error executing nilpanic: panic: assignment to entry in nil map"},
		"valid strict args":   {"strict", `{"path":"a"}`, `strict: {"path":"a"}`},
		"missing required":    {"strict", `{}`, `Error executing strict: invalid arguments: required: missing properties: ["path"]`},
		"wrong type":          {"strict", `{"path":7}`, `Error executing strict: invalid arguments: path: type: 7 has type "integer", want "string"`},
		"unknown property":    {"strict", `{"path":"a","mode":"x"}`, `Error executing strict: invalid arguments: unexpected additional properties ["mode"]`},
		"not an object":       {"strict", `["a"]`, `Error executing strict: invalid arguments: expected a JSON object, got an array`},
		"invalid JSON":        {"strict", `{"path":`, `Error executing strict: invalid arguments: not valid JSON: unexpected end of JSON input`},
		"absent args checked": {"strict", ``, `Error executing strict: invalid arguments: required: missing properties: ["path"]`},
		"typed wrong type":    {"typed", `{"n":"x"}`, `Error executing typed: invalid arguments: n: type: x has type "string", want "integer"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := r.Execute(t.Context(), tc.tool, json.RawMessage(tc.args)); got != tc.want {
				t.Errorf("Execute(%s, %s):\n got %q\nwant %q", tc.tool, tc.args, got, tc.want)
			}
		})
	}
	t.Cleanup(func() {
		// Only the one valid call may have reached the strict tool.
		if n := ranWithBadArgs.Load(); n != 1 {
			t.Errorf("the strict tool ran %d times, want once (for the valid arguments only)", n)
		}
	})
}

func TestRegistryPanicDoesNotBreakTheRegistry(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	var calls atomic.Int32
	mustRegister(t, r, &regTool{name: "flaky", run: func(context.Context, json.RawMessage) (string, error) {
		if calls.Add(1) == 1 {
			panic("first call")
		}
		return "fine", nil
	}})
	if got := r.Execute(t.Context(), "flaky", nil); got != "Error executing flaky: panic: first call" {
		t.Errorf("first call = %q", got)
	}
	if got := r.Execute(t.Context(), "flaky", nil); got != "fine" {
		t.Errorf("call after a panic = %q, want %q", got, "fine")
	}
}

// regBlocker returns a tool body that ignores its context: it returns
// only when released (at the end of the test) or after two seconds.
func regBlocker(t *testing.T, started chan<- struct{}) func(context.Context, json.RawMessage) (string, error) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(context.Context, json.RawMessage) (string, error) {
		if started != nil {
			started <- struct{}{}
		}
		select {
		case <-release:
		case <-time.After(2 * time.Second):
		}
		return "finished anyway", nil
	}
}

func TestRegistryTimeout(t *testing.T) {
	t.Parallel()

	t.Run("Options.Timeout, tool ignores its context", func(t *testing.T) {
		t.Parallel()
		r := newReg(t, &Options{Timeout: 50 * time.Millisecond})
		mustRegister(t, r, &regTool{name: "stuck", run: regBlocker(t, nil)})
		if got, want := r.Execute(t.Context(), "stuck", nil), "Error executing stuck: timed out after 50ms"; got != want {
			t.Errorf("Execute = %q, want %q", got, want)
		}
	})

	t.Run("SetTimeout overrides the registry's", func(t *testing.T) {
		t.Parallel()
		r := newReg(t, &Options{Timeout: time.Hour})
		mustRegister(t, r, &regTool{name: "stuck", run: regBlocker(t, nil)})
		if err := r.SetTimeout("stuck", 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if got, want := r.Execute(t.Context(), "stuck", nil), "Error executing stuck: timed out after 50ms"; got != want {
			t.Errorf("Execute = %q, want %q", got, want)
		}
	})

	t.Run("SetTimeout zero restores the default", func(t *testing.T) {
		t.Parallel()
		r := newReg(t, &Options{Timeout: 50 * time.Millisecond})
		mustRegister(t, r, &regTool{name: "stuck", run: regBlocker(t, nil)})
		if err := r.SetTimeout("stuck", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := r.SetTimeout("stuck", 0); err != nil {
			t.Fatal(err)
		}
		if got, want := r.Execute(t.Context(), "stuck", nil), "Error executing stuck: timed out after 50ms"; got != want {
			t.Errorf("Execute = %q, want %q", got, want)
		}
	})

	t.Run("tool that honours its context and returns its own error", func(t *testing.T) {
		t.Parallel()
		r := newReg(t, &Options{Timeout: 50 * time.Millisecond})
		mustRegister(t, r, &regTool{name: "polite", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			<-ctx.Done()
			return "", fmt.Errorf("gave up: %w", ctx.Err())
		}})
		if got, want := r.Execute(t.Context(), "polite", nil), "Error executing polite: timed out after 50ms"; got != want {
			t.Errorf("Execute = %q, want %q", got, want)
		}
	})

	t.Run("every call has a deadline", func(t *testing.T) {
		t.Parallel()
		r := newReg(t, nil)
		mustRegister(t, r, &regTool{name: "deadline", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			d, ok := ctx.Deadline()
			if !ok {
				return "no deadline", nil
			}
			if time.Until(d) > DefaultTimeout {
				return "deadline beyond DefaultTimeout", nil
			}
			return "ok", nil
		}})
		if got := r.Execute(t.Context(), "deadline", nil); got != "ok" {
			t.Errorf("Execute = %q, want a deadline within DefaultTimeout", got)
		}
	})
}

func TestRegistryCallersDeadline(t *testing.T) {
	t.Parallel()
	r := newReg(t, &Options{Timeout: time.Hour})
	mustRegister(t, r, &regTool{name: "stuck", run: regBlocker(t, nil)})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	got := r.Execute(ctx, "stuck", nil)
	if !strings.HasPrefix(got, "Error executing stuck: ") || strings.Contains(got, "1h0m0s") {
		t.Errorf("Execute under the caller's 50ms deadline = %q; it must fail without claiming the registry's 1h timeout", got)
	}
}

func TestRegistryCancellation(t *testing.T) {
	t.Parallel()
	tests := map[string]func(t *testing.T, started chan<- struct{}) func(context.Context, json.RawMessage) (string, error){
		"tool honours its context": func(_ *testing.T, started chan<- struct{}) func(context.Context, json.RawMessage) (string, error) {
			return func(ctx context.Context, _ json.RawMessage) (string, error) {
				started <- struct{}{}
				<-ctx.Done()
				return "", ctx.Err()
			}
		},
		"tool ignores its context": regBlocker,
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newReg(t, nil)
			started := make(chan struct{})
			mustRegister(t, r, &regTool{name: "slow", run: body(t, started)})

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				<-started
				cancel()
			}()
			if got, want := r.Execute(ctx, "slow", nil), "Error executing slow: canceled"; got != want {
				t.Errorf("Execute = %q, want %q", got, want)
			}
		})
	}
}

func TestRegistryPassesTheCallersContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	r := newReg(t, nil)
	mustRegister(t, r, &regTool{name: "ctx", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		v, _ := ctx.Value(key{}).(string)
		return v, nil
	}})
	ctx := context.WithValue(t.Context(), key{}, "from the caller")
	if got := r.Execute(ctx, "ctx", nil); got != "from the caller" {
		t.Errorf("the tool saw context value %q, want %q", got, "from the caller")
	}
}

// TestRegistryTypedTool: an sdk.NewTool tool through the registry answers
// as it does on its own, is not run on arguments it refuses, and decodes
// what the schema accepts.
func TestRegistryTypedTool(t *testing.T) {
	t.Parallel()
	type input struct {
		Path  string `json:"path"`
		Count int    `json:"count,omitempty"`
	}
	var ran []input
	var mu sync.Mutex
	tool := sdk.NewTool(sdk.Info{Name: "typed"}, func(_ context.Context, in input) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, in)
		if in.Path == "panic" {
			panic("boom")
		}
		return fmt.Sprintf("%s x%d", in.Path, in.Count), nil
	})
	r := newReg(t, nil)
	mustRegister(t, r, tool)

	for _, args := range []string{`{}`, `{"path":1}`, `{"path":"p","extra":true}`, `[]`, `{`, `null`} {
		_, err := tool.Execute(t.Context(), json.RawMessage(args))
		if err == nil {
			t.Fatalf("tool.Execute(%s) succeeded", args)
		}
		if got, want := r.Execute(t.Context(), "typed", json.RawMessage(args)), "Error executing typed: "+err.Error(); got != want {
			t.Errorf("Execute(%s) = %q, want %q", args, got, want)
		}
	}
	if len(ran) != 0 {
		t.Fatalf("the handler ran on refused arguments: %+v", ran)
	}
	if got, want := r.Execute(t.Context(), "typed", json.RawMessage(`{"path":"p","count":2.0}`)), "p x2"; got != want {
		t.Errorf("Execute = %q, want %q", got, want)
	}
	if got, want := r.Execute(t.Context(), "typed", json.RawMessage(`{"path":"panic"}`)), "Error executing typed: panic: boom"; got != want {
		t.Errorf("Execute of a panicking handler = %q, want %q", got, want)
	}
	if got := r.Execute(t.Context(), "typed", json.RawMessage(`{"path":"again"}`)); got != "again x0" {
		t.Errorf("Execute after a panic = %q", got)
	}
}

// TestRegistryDerivedContexts: a tool that derives contexts from its call's
// context still finds the roots, the host state, the deadline, and the
// call's end.
func TestRegistryDerivedContexts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tc := &regToolContext{}
	tc.set("prompt", "notes", "/s.json")
	r := newReg(t, &Options{ToolContext: tc, Roots: []string{root}, Timeout: 100 * time.Millisecond})
	type key struct{}
	ended := make(chan error, 1)
	mustRegister(t, r, &regTool{name: "derive", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		ctx, cancel := context.WithCancel(context.WithValue(ctx, key{}, "mine"))
		defer cancel()
		if _, ok := ctx.Deadline(); !ok {
			ended <- errors.New("the derived context has no deadline")
			return "", nil
		}
		done := make(chan struct{})
		go func() { // a helper of the tool's, watching the derived context
			<-ctx.Done()
			close(done)
		}()
		select {
		case <-done:
			ended <- nil
		case <-time.After(5 * time.Second):
			ended <- errors.New("the derived context outlived the call's deadline by 5s")
		}
		return "", ctx.Err()
	}})
	if got, want := r.Execute(t.Context(), "derive", nil), "Error executing derive: timed out after 100ms"; got != want {
		t.Errorf("Execute = %q, want %q", got, want)
	}
	if err := <-ended; err != nil {
		t.Error(err)
	}

	// Without waiting for the end: what the tool sees.
	mustRegister(t, r, &regTool{name: "see", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		ctx, cancel := context.WithCancel(context.WithValue(ctx, key{}, "mine"))
		defer cancel()
		st, err := sdk.HostState(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v|%s|%s", sdk.Roots(ctx), st.SystemPrompt, ctx.Value(key{})), nil
	}})
	if got, want := r.Execute(t.Context(), "see", nil), fmt.Sprintf("[%s]|prompt|mine", root); got != want {
		t.Errorf("Execute = %q, want %q", got, want)
	}
}

func TestIsError(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		result string
		want   bool
	}{
		"not found":              {"Error: tool not found: x", true},
		"not available":          {"Error: tool not available: x is disabled", true},
		"executing":              {"Error executing x: boom", true},
		"timeout":                {"Error executing x: timed out after 1s", true},
		"plain result":           {"hello", false},
		"empty":                  {"", false},
		"lowercase error":        {"error executing x: boom", false},
		"other Error: text":      {"Error: something else", false},
		"mentions an error":      {"the file says Error executing x", false},
		"Error without a space":  {"Error:tool not found: x", false},
		"leading space":          {" Error executing x: y", false},
		"Error executing prefix": {"Error executing", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := IsError(tc.result); got != tc.want {
				t.Errorf("IsError(%q) = %v, want %v", tc.result, got, tc.want)
			}
		})
	}
}

// regToolContext is a ToolContext whose values the test changes.
type regToolContext struct {
	mu                    sync.Mutex
	prompt, session, path string
}

func (c *regToolContext) set(prompt, session, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompt, c.session, c.path = prompt, session, path
}

func (c *regToolContext) SystemPrompt() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prompt
}

func (c *regToolContext) SessionContext() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

func (c *regToolContext) SessionContextFilePath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.path
}

var _ ToolContext = (*regToolContext)(nil)

// regStateTool answers with the host state it is given, or HostState's
// error; it records that error in *lastErr.
func regStateTool(lastErr *error) *regTool {
	var mu sync.Mutex
	return &regTool{name: "state", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		st, err := sdk.HostState(ctx)
		mu.Lock()
		*lastErr = err
		mu.Unlock()
		if err != nil {
			return "", err
		}
		return st.SystemPrompt + "|" + st.SessionContext + "|" + st.SessionContextFilePath, nil
	}}
}

func TestRegistryToolContext(t *testing.T) {
	t.Parallel()

	t.Run("read live", func(t *testing.T) {
		t.Parallel()
		tc := &regToolContext{}
		tc.set("prompt 1", "notes 1", "/one.json")
		var lastErr error
		r := newReg(t, &Options{ToolContext: tc})
		mustRegister(t, r, regStateTool(&lastErr))

		if got, want := r.Execute(t.Context(), "state", nil), "prompt 1|notes 1|/one.json"; got != want {
			t.Errorf("first call = %q, want %q", got, want)
		}
		tc.set("prompt 2", "", "/two.json")
		if got, want := r.Execute(t.Context(), "state", nil), "prompt 2||/two.json"; got != want {
			t.Errorf("after the state changed = %q, want %q", got, want)
		}
	})

	t.Run("SetToolContext", func(t *testing.T) {
		t.Parallel()
		var lastErr error
		r := newReg(t, nil)
		mustRegister(t, r, regStateTool(&lastErr))

		first := &regToolContext{}
		first.set("p", "s", "f")
		r.SetToolContext(first)
		if got, want := r.Execute(t.Context(), "state", nil), "p|s|f"; got != want {
			t.Errorf("after SetToolContext = %q, want %q", got, want)
		}
		second := &regToolContext{}
		second.set("P2", "S2", "F2")
		r.SetToolContext(second)
		if got, want := r.Execute(t.Context(), "state", nil), "P2|S2|F2"; got != want {
			t.Errorf("after a second SetToolContext = %q, want %q", got, want)
		}
		r.SetToolContext(nil)
		r.Execute(t.Context(), "state", nil)
		if !errors.Is(lastErr, sdk.ErrNoHostState) {
			t.Errorf("after SetToolContext(nil) HostState error = %v, want sdk.ErrNoHostState", lastErr)
		}
	})

	t.Run("no ToolContext", func(t *testing.T) {
		t.Parallel()
		var lastErr error
		r := newReg(t, nil)
		mustRegister(t, r, regStateTool(&lastErr))
		got := r.Execute(t.Context(), "state", nil)
		if !errors.Is(lastErr, sdk.ErrNoHostState) {
			t.Errorf("HostState error = %v, want sdk.ErrNoHostState", lastErr)
		}
		if want := "Error executing state: " + sdk.ErrNoHostState.Error(); got != want {
			t.Errorf("Execute = %q, want %q", got, want)
		}
	})
}

func TestRegistryNilOptions(t *testing.T) {
	t.Parallel()
	r := NewToolRegistry(nil)
	if err := r.Register(simple("echo")); err != nil {
		t.Fatal(err)
	}
	if got := r.Execute(t.Context(), "echo", nil); got != "echo: {}" {
		t.Errorf("Execute with nil Options = %q", got)
	}
}

func TestRegistryConcurrentUse(t *testing.T) {
	t.Parallel()
	tc := &regToolContext{}
	tc.set("p", "s", "f")
	r := newReg(t, &Options{ToolContext: tc})
	mustRegister(t, r,
		&regTool{name: "stable", run: func(ctx context.Context, args json.RawMessage) (string, error) {
			if _, err := sdk.HostState(ctx); err != nil {
				return "", err
			}
			return "stable: " + string(args), nil
		}},
		simple("toggled"),
	)

	const workers = 50
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			args := fmt.Sprintf(`{"i":%d}`, i)
			if got, want := r.Execute(t.Context(), "stable", json.RawMessage(args)), "stable: "+args; got != want {
				t.Errorf("Execute(stable) = %q, want %q", got, want)
			}
			got := r.Execute(t.Context(), "toggled", nil)
			if got != "toggled: {}" && got != "Error: tool not available: toggled is disabled" {
				t.Errorf("Execute(toggled) = %q", got)
			}
			churn := fmt.Sprintf("churn_%d", i)
			got = r.Execute(t.Context(), churn, nil)
			if got != churn+": {}" && got != "Error: tool not found: "+churn {
				t.Errorf("Execute(%s) = %q", churn, got)
			}
		})
		wg.Go(func() {
			name := fmt.Sprintf("churn_%d", i)
			for range 3 {
				if err := r.Register(simple(name)); err != nil {
					t.Errorf("Register(%s): %v", name, err)
				}
				r.Unregister(name)
			}
			if err := r.Register(simple(name)); err != nil {
				t.Errorf("Register(%s): %v", name, err)
			}
		})
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				err = r.Disable("toggled")
			} else {
				err = r.Enable("toggled")
			}
			if err != nil {
				t.Errorf("toggling: %v", err)
			}
			_ = r.SetTimeout("stable", time.Minute)
			tc.set(fmt.Sprint(i), "s", "f")
			r.SetToolContext(tc)
			_ = r.EnabledSchemas()
			_ = r.ToolNames()
			_ = r.Tools()
			_ = r.HasTool("stable")
			_ = r.IsToolEnabled("toggled")
		})
	}
	wg.Wait()

	names := r.ToolNames()
	if len(names) != 2+workers {
		t.Errorf("after the churn there are %d tools, want %d: %v", len(names), 2+workers, names)
	}
	if names[0] != "stable" || names[1] != "toggled" {
		t.Errorf("the first tools moved: %v", names[:2])
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s is listed twice", n)
		}
		seen[n] = true
	}
}

// regSchemaNames returns the function names of r's enabled schemas.
func regSchemaNames(r *ToolRegistry) []string {
	var names []string
	for _, s := range r.EnabledSchemas() {
		names = append(names, s.Function.Name)
	}
	return names
}

func TestRegistryToolDeclaredTimeout(t *testing.T) {
	t.Parallel()
	r := NewToolRegistry(&Options{Timeout: time.Hour})
	slow := sdk.NewTool(sdk.Info{Name: "slow", Annotations: sdk.Annotations{Timeout: 30 * time.Millisecond}},
		func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
	if err := r.Register(slow); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Execute(t.Context(), "slow", nil), "Error executing slow: timed out after 30ms"; got != want {
		t.Errorf("declared timeout: %q, want %q", got, want)
	}
	if err := r.SetTimeout("slow", 40*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Execute(t.Context(), "slow", nil), "Error executing slow: timed out after 40ms"; got != want {
		t.Errorf("user's timeout: %q, want %q", got, want)
	}
	if err := r.SetTimeout("slow", 0); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Execute(t.Context(), "slow", nil), "Error executing slow: timed out after 30ms"; got != want {
		t.Errorf("restored: %q, want %q", got, want)
	}
}
