package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// A plugin's tools keep their titles and output schemas across the
// process boundary and in the description cache, and their structured
// results cross the boundary as the plugin sent them; the host fails a
// call whose structured result breaks the tool's output schema, says
// why, and goes on serving.
func TestStructuredResultsFromAPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	installHostile(t, dir, "x-typed")
	cache := t.TempDir()
	logger, logs := logged()
	reg := load(t, dir, &host.Options{Logger: logger, CacheDir: cache})

	const schema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
	info := toolInfo(reg, "typed_good")
	if info.Title != "Typed: typed_good" || string(info.OutputSchema) != schema {
		t.Errorf("typed_good's info: title %q, output schema %s", info.Title, info.OutputSchema)
	}
	refused := reportOf(t, reg, host.PluginPrefix+"x-typed").Refused
	for _, want := range []string{
		`invalid tool: typed_not_object: its output schema has type string, not "object"`,
		`invalid tool: typed_long_title: its title is 1024 bytes, more than the 256 allowed`,
	} {
		if !slices.Contains(refused, want) {
			t.Errorf("refused %q, want it to say %q", refused, want)
		}
	}

	tests := map[string]struct {
		want host.Result
	}{
		"typed_good":     {host.Result{Text: "1", Structured: json.RawMessage(`{"n":1}`)}},
		"typed_not_json": {host.Result{Text: "Error executing typed_not_json: the structured result is not JSON: unexpected end of JSON input", IsError: true}},
		"typed_array":    {host.Result{Text: "Error executing typed_array: the structured result is an array, not a JSON object", IsError: true}},
		"typed_wrong": {host.Result{Text: `Error executing typed_wrong: the structured result does not conform to the output schema: n: type: one has type "string", want "integer"`,
			IsError: true}},
		"typed_missing": {host.Result{Text: "Error executing typed_missing: the tool returned no structured result, though it declares an output schema", IsError: true}},
		"typed_bad_ref": {host.Result{Text: `Error executing typed_bad_ref: the tool's output schema is malformed: JSON Pointer "/$defs/missing": no key "missing" in map`,
			IsError: true}},
	}
	for name, tc := range tests {
		got := reg.ExecuteResult(t.Context(), name, nil)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ExecuteResult(%s) = %+v (%s)\nwant %+v", name, got, got.Structured, tc.want)
		}
		// The text alone is the tool's text: only the structured part is
		// wrong, and Execute does not return it.
		if got := reg.Execute(t.Context(), name, nil); got != "1" && name != "typed_missing" {
			t.Errorf("Execute(%s) = %q, want %q", name, got, "1")
		}
	}
	if got := reg.ExecuteResult(t.Context(), "typed_good", nil); string(got.Structured) != `{"n":1}` {
		t.Errorf("typed_good after the hostile calls = %+v", got)
	}
	if !strings.Contains(logs.String(), "failing a call whose structured result breaks the tool's output schema") {
		t.Errorf("the log does not say why the calls failed:\n%s", logs)
	}
	// Errors and unknown tools are failures with no structured part.
	if got := reg.ExecuteResult(t.Context(), "nope", nil); !got.IsError || got.Structured != nil || got.Text != "Error: tool not found: nope" {
		t.Errorf("ExecuteResult(nope) = %+v", got)
	}

	// A host with the description cached has the same tools, titles and
	// output schemas, without starting the plugin to learn them.
	entries, err := filepath.Glob(filepath.Join(cache, "*"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("the cache holds %v, %v; want one entry", entries, err)
	}
	if data, err := os.ReadFile(entries[0]); err != nil || !strings.Contains(string(data), `"title":"Typed: typed_good"`) || !strings.Contains(string(data), `"output":{"type":"object"`) {
		t.Errorf("the cache entry does not keep titles and output schemas: %s, %v", data, err)
	}
	again := load(t, dir, &host.Options{CacheDir: cache})
	if got, want := again.Tools(), reg.Tools(); !reflect.DeepEqual(got, want) {
		t.Errorf("Tools from the cache:\n got %+v\nwant %+v", got, want)
	}
	if got := again.ExecuteResult(t.Context(), "typed_good", nil); string(got.Structured) != `{"n":1}` {
		t.Errorf("typed_good from the cache = %+v", got)
	}
}

type sumInput struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOutput struct {
	Sum int `json:"sum"`
}

// lyingTool declares an output schema its results do not follow.
type lyingTool struct{ sdk.Tool }

func (lyingTool) OutputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"sum":{"type":"string"}},"required":["sum"]}`)
}

func (l lyingTool) ExecuteStructured(ctx context.Context, args json.RawMessage) (string, json.RawMessage, error) {
	return l.Tool.(sdk.StructuredTool).ExecuteStructured(ctx, args)
}

// badSchemaTool is a structured tool with another output schema.
type badSchemaTool struct {
	lyingTool
	schema json.RawMessage
}

func (b badSchemaTool) OutputSchema() json.RawMessage { return b.schema }

// An in-process tool built with sdk.NewStructuredTool answers as a
// plugin's does, and its structured results are checked alike.
func TestStructuredResultsInProcess(t *testing.T) {
	t.Parallel()
	sum := sdk.NewStructuredTool(sdk.Info{Name: "sum", Title: "Add two numbers", Description: "Add."},
		func(_ context.Context, in sumInput) (string, sumOutput, error) {
			if in.A < 0 {
				return "", sumOutput{}, errors.New("a is negative")
			}
			return "the sum is " + string(rune('0'+in.A+in.B)), sumOutput{Sum: in.A + in.B}, nil
		})
	lying := lyingTool{sdk.NewStructuredTool(sdk.Info{Name: "lying"},
		func(_ context.Context, in sumInput) (string, sumOutput, error) { return "3", sumOutput{Sum: 3}, nil })}
	reg := host.NewToolRegistry(nil)
	if err := reg.Register(sum); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(lying); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		tool, args string
		want       host.Result
	}{
		"result":            {"sum", `{"a":1,"b":2}`, host.Result{Text: "the sum is 3", Structured: json.RawMessage(`{"sum":3}`)}},
		"error":             {"sum", `{"a":-1,"b":2}`, host.Result{Text: "Error executing sum: a is negative", IsError: true}},
		"invalid arguments": {"sum", `{"a":1}`, host.Result{Text: `Error executing sum: invalid arguments: required: missing properties: ["b"]`, IsError: true}},
		"does not conform": {"lying", `{"a":1,"b":2}`, host.Result{Text: `Error executing lying: the structured result does not conform to the output schema: sum: type: 3 has type "integer", want "string"`,
			IsError: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := reg.ExecuteResult(t.Context(), tc.tool, json.RawMessage(tc.args)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ExecuteResult = %+v (%s)\nwant %+v", got, got.Structured, tc.want)
			}
		})
	}
	// An output schema that is not an object schema is refused at
	// registration, as a plugin's is.
	bad := badSchemaTool{lying, json.RawMessage(`{"type":"array"}`)}
	if err := host.NewToolRegistry(nil).Register(bad); !errors.Is(err, host.ErrInvalidTool) ||
		err.Error() != `invalid tool: lying: its output schema has type array, not "object"` {
		t.Errorf("Register of a tool whose output schema is an array: %v", err)
	}
	infos := reg.Tools()
	if infos[0].Title != "Add two numbers" || string(infos[0].OutputSchema) != string(sdk.OutputSchemaOf(sum)) {
		t.Errorf("sum's info = %+v", infos[0])
	}
}

// An MCP server's tool titles, output schemas and structured content come
// through, checked as a plugin's are.
func TestStructuredResultsFromAnMCPServer(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, nil, hostileMCP(t, "hostile"))
	info := toolInfo(reg, "count")
	if info.Title != "Count words" || !strings.Contains(string(info.OutputSchema), `"words":{"type":"integer"}`) {
		t.Errorf("count's info: title %q, output schema %s", info.Title, info.OutputSchema)
	}
	if got, want := reg.ExecuteResult(t.Context(), "count", json.RawMessage(`{"text":"a b c"}`)), (host.Result{Text: "3 words", Structured: json.RawMessage(`{"words":3}`)}); !reflect.DeepEqual(got, want) {
		t.Errorf("ExecuteResult(count) = %+v (%s), want %+v", got, got.Structured, want)
	}
	want := host.Result{Text: `Error executing lie: the structured result does not conform to the output schema: words: type: two has type "string", want "integer"`, IsError: true}
	if got := reg.ExecuteResult(t.Context(), "lie", nil); !reflect.DeepEqual(got, want) {
		t.Errorf("ExecuteResult(lie) = %+v, want %+v", got, want)
	}
	if got := reg.Execute(t.Context(), "lie", nil); got != "two words" {
		t.Errorf("Execute(lie) = %q, want the text", got)
	}
	// A tool without an output schema has no structured part, whatever
	// the server sends.
	if got := reg.ExecuteResult(t.Context(), "echo", json.RawMessage(`{"text":"hi"}`)); !reflect.DeepEqual(got, host.Result{Text: "hi"}) {
		t.Errorf("ExecuteResult(echo) = %+v", got)
	}
}
