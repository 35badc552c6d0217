package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/internal/toolcall"
)

// typedInput is the small struct whose inferred schema the tests pin down.
type typedInput struct {
	Path  string `json:"path" jsonschema:"Path of the file."`
	Count int    `json:"count,omitempty" jsonschema:"How many."`
	Flag  bool   `json:"flag,omitzero"`
}

// newTypedTool returns a tool over typedInput whose handler records what
// it received.
func newTypedTool(t *testing.T) (Tool, *[]typedInput) {
	t.Helper()
	var calls []typedInput
	tool := NewTool(Info{Name: "typed", Description: "A typed tool."}, func(_ context.Context, in typedInput) (string, error) {
		calls = append(calls, in)
		return "ok: " + in.Path, nil
	})
	return tool, &calls
}

func TestNewToolSchema(t *testing.T) {
	t.Parallel()
	tool, _ := newTypedTool(t)

	got, err := json.Marshal(tool.Schema())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"function","function":{"name":"typed","description":"A typed tool.",` +
		`"parameters":{"type":"object","properties":{` +
		`"path":{"type":"string","description":"Path of the file."},` +
		`"count":{"type":"integer","description":"How many."},` +
		`"flag":{"type":"boolean"}},` +
		`"required":["path"],"additionalProperties":false}}}`
	if string(got) != want {
		t.Errorf("Schema() JSON:\n got %s\nwant %s", got, want)
	}
	if tool.Name() != "typed" {
		t.Errorf("Name() = %q, want %q", tool.Name(), "typed")
	}
}

func TestNewToolSchemaParameters(t *testing.T) {
	t.Parallel()
	tool, _ := newTypedTool(t)

	var params struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tool.Schema().Function.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		got, want any
	}{
		"type is object":                     {params.Type, "object"},
		"only the field without omit*":       {strings.Join(params.Required, ","), "path"},
		"omitempty field is a property":      {params.Properties["count"] != nil, true},
		"omitzero field is a property":       {params.Properties["flag"] != nil, true},
		"additionalProperties is present":    {params.AdditionalProperties != nil, true},
		"additionalProperties is false":      {params.AdditionalProperties != nil && !*params.AdditionalProperties, true},
		"property count matches the fields":  {len(params.Properties), 3},
		"Schema type is function":            {tool.Schema().Type, "function"},
		"Schema function name is the name":   {tool.Schema().Function.Name, "typed"},
		"Schema description is Description":  {tool.Schema().Function.Description, "A typed tool."},
		"zero Annotations when none are set": {AnnotationsOf(tool), Annotations{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestNewToolAnnotations(t *testing.T) {
	t.Parallel()
	want := Annotations{ReadOnly: true, Idempotent: true, OpenWorld: true, OptIn: true}
	tool := NewTool(Info{Name: "annotated", Annotations: want}, func(context.Context, struct{}) (string, error) { return "", nil })
	if _, ok := tool.(Annotator); !ok {
		t.Fatal("a NewTool tool does not implement Annotator")
	}
	if got := AnnotationsOf(tool); got != want {
		t.Errorf("AnnotationsOf = %+v, want %+v", got, want)
	}
}

func TestNewToolExecute(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args       string
		wantResult string
		wantInput  typedInput
	}{
		"all fields":         {`{"path":"a.txt","count":3,"flag":true}`, "ok: a.txt", typedInput{Path: "a.txt", Count: 3, Flag: true}},
		"optional omitted":   {`{"path":"b"}`, "ok: b", typedInput{Path: "b"}},
		"whitespace around":  {" \n{\"path\":\"c\"}\t", "ok: c", typedInput{Path: "c"}},
		"empty string value": {`{"path":""}`, "ok: ", typedInput{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool, calls := newTypedTool(t)
			got, err := tool.Execute(t.Context(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("Execute(%s) error: %v", tc.args, err)
			}
			if got != tc.wantResult {
				t.Errorf("Execute(%s) = %q, want %q", tc.args, got, tc.wantResult)
			}
			if len(*calls) != 1 || (*calls)[0] != tc.wantInput {
				t.Errorf("handler received %+v, want one call with %+v", *calls, tc.wantInput)
			}
		})
	}
}

func TestNewToolIntegralFloat(t *testing.T) {
	t.Parallel()
	tool, calls := newTypedTool(t)
	got, err := tool.Execute(t.Context(), json.RawMessage(`{"path":"d","count":2.0}`))
	if err != nil || got != "ok: d" {
		t.Fatalf("Execute = %q, %v; want \"ok: d\", nil", got, err)
	}
	if want := (typedInput{Path: "d", Count: 2}); len(*calls) != 1 || (*calls)[0] != want {
		t.Errorf("handler received %+v, want %+v", *calls, want)
	}
}

// invalidArgs are arguments that newTypedTool refuses, with the whole
// error text.
var invalidArgs = map[string]struct {
	args string
	want string
}{
	"missing required": {`{}`, `invalid arguments: required: missing properties: ["path"]`},
	"wrong type":       {`{"path":1}`, `invalid arguments: path: type: 1 has type "integer", want "string"`},
	"non-integer":      {`{"path":"x","count":1.5}`, `invalid arguments: count: type: 1.5 has type "number", want "integer"`},
	"unknown property": {`{"path":"x","extra":1}`, `invalid arguments: unexpected additional properties ["extra"]`},
	"array":            {`[]`, `invalid arguments: expected a JSON object, got an array`},
	"string":           {`"s"`, `invalid arguments: expected a JSON object, got a string`},
	"number":           {`42`, `invalid arguments: expected a JSON object, got a number`},
	"boolean":          {`true`, `invalid arguments: expected a JSON object, got a boolean`},
	"invalid JSON":     {`{`, `invalid arguments: not valid JSON: unexpected end of JSON input`},
	// Absent arguments are the empty object, so they fail as {} does.
	"null is {}":       {`null`, `invalid arguments: required: missing properties: ["path"]`},
	"empty is {}":      {``, `invalid arguments: required: missing properties: ["path"]`},
	"whitespace is {}": {" \t\n", `invalid arguments: required: missing properties: ["path"]`},
}

func TestNewToolValidation(t *testing.T) {
	t.Parallel()
	for name, tc := range invalidArgs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool, calls := newTypedTool(t)
			got, err := tool.Execute(t.Context(), json.RawMessage(tc.args))
			if err == nil {
				t.Fatalf("Execute(%q) = %q, want an error", tc.args, got)
			}
			if err.Error() != tc.want {
				t.Errorf("Execute(%q) error:\n got %q\nwant %q", tc.args, err.Error(), tc.want)
			}
			if got != "" {
				t.Errorf("Execute(%q) result = %q alongside its error, want \"\"", tc.args, got)
			}
			// The registry's way in refuses them alike.
			call, err := tool.(toolcall.Preparer).PrepareCall(NormalizeArgs(json.RawMessage(tc.args)))
			if err == nil || err.Error() != tc.want || call != nil {
				t.Errorf("PrepareCall(%q) = call %v, error %v; want no call and %q", tc.args, call != nil, err, tc.want)
			}
			if len(*calls) != 0 {
				t.Errorf("the handler ran with %+v; invalid arguments must not reach it", *calls)
			}
		})
	}
}

// TestNewToolPrepareCall: the registry's way in decodes the arguments
// first (TestNewToolValidation has it refuse what Execute refuses) and
// runs the handler only when the returned call runs.
func TestNewToolPrepareCall(t *testing.T) {
	t.Parallel()
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		tool, calls := newTypedTool(t)
		call, err := tool.(toolcall.Preparer).PrepareCall(json.RawMessage(`{"path":"p","count":3.0,"flag":true}`))
		if err != nil {
			t.Fatalf("PrepareCall: %v", err)
		}
		if len(*calls) != 0 {
			t.Fatalf("the handler ran before the call did: %+v", *calls)
		}
		if got, _, err := call(t.Context()); err != nil || got != "ok: p" {
			t.Fatalf("call = %q, %v", got, err)
		}
		if want := (typedInput{Path: "p", Count: 3, Flag: true}); len(*calls) != 1 || (*calls)[0] != want {
			t.Errorf("handler received %+v, want %+v", *calls, want)
		}
	})
}

func TestNewToolAbsentArgumentsAreEmptyObject(t *testing.T) {
	t.Parallel()
	for name, args := range map[string]json.RawMessage{
		"nil":        nil,
		"empty":      json.RawMessage(""),
		"null":       json.RawMessage("null"),
		"whitespace": json.RawMessage("  "),
		"padded nul": json.RawMessage(" null\n"),
		"{}":         json.RawMessage("{}"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ran := false
			tool := NewTool(Info{Name: "noargs"}, func(context.Context, struct{}) (string, error) {
				ran = true
				return "done", nil
			})
			got, err := tool.Execute(t.Context(), args)
			if err != nil || got != "done" || !ran {
				t.Errorf("Execute(%q) = %q, %v (ran %v); want \"done\", nil", args, got, err, ran)
			}
		})
	}
}

func TestNewToolHandlerErrorAndContext(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	type key struct{}
	var seen any
	tool := NewTool(Info{Name: "fails"}, func(ctx context.Context, _ struct{}) (string, error) {
		seen = ctx.Value(key{})
		return "partial", errBoom
	})
	ctx := context.WithValue(t.Context(), key{}, "value")
	got, err := tool.Execute(ctx, nil)
	if !errors.Is(err, errBoom) {
		t.Errorf("Execute error = %v, want the handler's error", err)
	}
	if got != "partial" {
		t.Errorf("Execute result = %q, want the handler's %q", got, "partial")
	}
	if seen != "value" {
		t.Errorf("the handler's context carried %v, want the caller's value", seen)
	}
}

func TestNewToolPanics(t *testing.T) {
	t.Parallel()
	handler := func(context.Context, typedInput) (string, error) { return "", nil }
	tests := map[string]struct {
		build func()
		want  string // part of the panic message
	}{
		"empty name":        {func() { NewTool(Info{Name: ""}, handler) }, "invalid tool name"},
		"name with a space": {func() { NewTool(Info{Name: "a b"}, handler) }, "invalid tool name"},
		"name too long":     {func() { NewTool(Info{Name: strings.Repeat("a", 65)}, handler) }, "invalid tool name"},
		"string input":      {func() { NewTool(Info{Name: "s"}, func(context.Context, string) (string, error) { return "", nil }) }, "must be a struct"},
		"int input":         {func() { NewTool(Info{Name: "i"}, func(context.Context, int) (string, error) { return "", nil }) }, "must be a struct"},
		"slice input":       {func() { NewTool(Info{Name: "l"}, func(context.Context, []string) (string, error) { return "", nil }) }, "must be a struct"},
		"pointer input": {func() {
			NewTool(Info{Name: "p"}, func(context.Context, *typedInput) (string, error) { return "", nil })
		}, "must be a struct"},
		"unsupported fields": {func() {
			NewTool(Info{Name: "c"}, func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
		}, "inferring the input schema"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := panicMessage(tc.build)
			if msg == "" {
				t.Fatal("NewTool did not panic")
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("panic %q does not mention %q", msg, tc.want)
			}
		})
	}
}

func TestNewToolPanicsForMapInput(t *testing.T) {
	t.Parallel()
	msg := panicMessage(func() {
		NewTool(Info{Name: "m"}, func(context.Context, map[string]any) (string, error) { return "", nil })
	})
	if !strings.Contains(msg, "must be a struct") {
		t.Errorf("NewTool with a map input: panic %q, want one saying the input must be a struct", msg)
	}
}

// panicMessage runs f and returns what it panicked with, or "" if it did
// not panic.
func panicMessage(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg, _ = p.(string)
			if msg == "" {
				msg = "non-string panic"
			}
		}
	}()
	f()
	return ""
}

func TestNormalizeArgs(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in, want string
	}{
		"empty":        {"", "{}"},
		"whitespace":   {" \n\t", "{}"},
		"null":         {"null", "{}"},
		"padded null":  {"  null ", "{}"},
		"object":       {`{"a":1}`, `{"a":1}`},
		"array kept":   {`[]`, `[]`},
		"nullx kept":   {`nullx`, `nullx`},
		"empty object": {`{}`, `{}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := string(NormalizeArgs(json.RawMessage(tc.in))); got != tc.want {
				t.Errorf("NormalizeArgs(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestAnnotationsOfPlainTool(t *testing.T) {
	t.Parallel()
	if got := AnnotationsOf(plainTool{name: "plain"}); got != (Annotations{}) {
		t.Errorf("AnnotationsOf(a tool without Annotations) = %+v, want the zero value", got)
	}
}

func TestHostState(t *testing.T) {
	t.Parallel()

	t.Run("no StateFunc", func(t *testing.T) {
		t.Parallel()
		st, err := HostState(t.Context())
		if !errors.Is(err, ErrNoHostState) {
			t.Errorf("HostState error = %v, want ErrNoHostState", err)
		}
		if st != (State{}) {
			t.Errorf("HostState state = %+v, want the zero State", st)
		}
	})

	t.Run("WithStateFunc answers", func(t *testing.T) {
		t.Parallel()
		want := State{SystemPrompt: "prompt", SessionContext: "notes", SessionContextFilePath: "/tmp/session.json"}
		calls := 0
		ctx := WithStateFunc(t.Context(), func(context.Context) (State, error) {
			calls++
			return want, nil
		})
		got, err := HostState(ctx)
		if err != nil || got != want {
			t.Errorf("HostState = %+v, %v; want %+v, nil", got, err, want)
		}
		if calls != 1 {
			t.Errorf("the StateFunc ran %d times, want 1", calls)
		}
	})

	t.Run("StateFunc is asked each time", func(t *testing.T) {
		t.Parallel()
		n := 0
		ctx := WithStateFunc(t.Context(), func(context.Context) (State, error) {
			n++
			return State{SessionContext: strings.Repeat("x", n)}, nil
		})
		first, _ := HostState(ctx)
		second, _ := HostState(ctx)
		if first.SessionContext != "x" || second.SessionContext != "xx" {
			t.Errorf("two HostState calls gave %q and %q, want live values \"x\" and \"xx\"", first.SessionContext, second.SessionContext)
		}
	})

	t.Run("StateFunc error", func(t *testing.T) {
		t.Parallel()
		errDown := errors.New("host is down")
		ctx := WithStateFunc(t.Context(), func(context.Context) (State, error) { return State{}, errDown })
		if _, err := HostState(ctx); !errors.Is(err, errDown) {
			t.Errorf("HostState error = %v, want the StateFunc's error", err)
		}
	})

	t.Run("nil StateFunc", func(t *testing.T) {
		t.Parallel()
		ctx := WithStateFunc(t.Context(), nil)
		if _, err := HostState(ctx); !errors.Is(err, ErrNoHostState) {
			t.Errorf("HostState with a nil StateFunc: error = %v, want ErrNoHostState", err)
		}
	})
}

// A typed tool encodes and resolves its schema on first use, whichever
// comes first and however many calls arrive together: every caller sees
// the same schema, and the first calls are checked like any other.
func TestTypedToolFirstUsesTogether(t *testing.T) {
	t.Parallel()
	for range 20 {
		tool := NewTool(Info{Name: "first"}, func(_ context.Context, in typedInput) (string, error) { return in.Path, nil })
		var wg sync.WaitGroup
		schemas := make([]string, 8)
		results := make([]string, 8)
		errs := make([]error, 8)
		for i := range 8 {
			wg.Go(func() {
				if i%2 == 0 {
					schemas[i] = string(tool.Schema().Function.Parameters)
					return
				}
				args := `{"path":"p"}`
				if i == 3 {
					args = `{"path":1}`
				}
				results[i], errs[i] = tool.Execute(context.Background(), json.RawMessage(args))
			})
		}
		wg.Wait()
		for i := 0; i < 8; i += 2 {
			if schemas[i] == "" || schemas[i] != schemas[0] {
				t.Fatalf("schema %d = %q, schema 0 = %q", i, schemas[i], schemas[0])
			}
		}
		if results[1] != "p" || errs[1] != nil {
			t.Errorf("a valid first call = %q, %v", results[1], errs[1])
		}
		if errs[3] == nil || !strings.Contains(errs[3].Error(), "path") {
			t.Errorf("an invalid first call = %q, %v; want an error naming path", results[3], errs[3])
		}
	}
}
