package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// geminiKeywords are the keywords of the schema Gemini's function
// declarations take, a select subset of OpenAPI 3.0's schema object
// (the Schema type of the Gemini API). Its parser refuses a whole
// request over any other keyword ("Unknown name ...: Cannot find
// field"), whatever the keyword's value.
var geminiKeywords = []string{
	"type", "format", "title", "description", "nullable", "enum", "default", "example",
	"properties", "required", "propertyOrdering", "minProperties", "maxProperties",
	"items", "minItems", "maxItems",
	"minLength", "maxLength", "pattern",
	"minimum", "maximum",
	"anyOf",
}

// jsonTypes are the types a schema may have; "null" is not one of them.
var jsonTypes = []string{"string", "number", "integer", "boolean", "array", "object"}

// strictProblems returns what a strict client (MCP Inspector's strict
// mode, a Gemini-style client) refuses in the parameters schema raw, one
// line each, named by the path of the schema in error (such as
// "search_text.paths"):
//
//   - a type array, a "null" type, or a schema without a type;
//   - an array without items, an object below the top without
//     properties (Gemini refuses both);
//   - "required" naming what "properties" does not have;
//   - a keyword outside Gemini's subset.
//
// One keyword outside the subset is kept on purpose: additionalProperties
// false on an object. Arguments are validated against
// the very schema a tool publishes (by the tool, or by the host for a
// plugin that does not check its own), and that keyword is what refuses
// an argument the tool does not have, such as a misspelt optional one;
// OpenAI's strict function calling requires it too. A Gemini client has
// to drop it, which loses nothing the model needs. Any other form of
// additionalProperties (true, or a schema: a map) says what Gemini's
// subset cannot, and is a problem.
func strictProblems(tool string, raw json.RawMessage) []string {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return []string{fmt.Sprintf("%s: not a JSON object: %v", tool, err)}
	}
	var problems []string
	var walk func(path string, s map[string]any, top bool)
	walk = func(path string, s map[string]any, top bool) {
		report := func(format string, args ...any) {
			problems = append(problems, path+": "+fmt.Sprintf(format, args...))
		}
		typ, isString := s["type"].(string)
		switch {
		case s["type"] == nil:
			report("no type")
		case !isString:
			report("type %v is not a single type", s["type"])
		case !slices.Contains(jsonTypes, typ):
			report("type %q", typ)
		}
		for _, key := range sortedKeys(s) {
			if slices.Contains(geminiKeywords, key) {
				continue
			}
			if key == "additionalProperties" && s[key] == false && typ == "object" {
				continue
			}
			report("keyword %s (%s) is outside Gemini's schema subset", key, compact(s[key]))
		}
		props, _ := s["properties"].(map[string]any)
		switch typ {
		case "array":
			items, ok := s["items"].(map[string]any)
			if !ok {
				report("an array without items")
				break
			}
			walk(path+"[]", items, false)
		case "object":
			if len(props) == 0 && !top {
				report("an object without properties")
			}
		}
		required, _ := s["required"].([]any)
		for _, r := range required {
			if name, _ := r.(string); props[name] == nil {
				report("required %v is not a property", r)
			}
		}
		for _, name := range sortedKeys(props) {
			p, ok := props[name].(map[string]any)
			if !ok {
				report("property %s is not a schema object", name)
				continue
			}
			walk(path+"."+name, p, false)
		}
		if sub, ok := s["additionalProperties"].(map[string]any); ok {
			walk(path+".*", sub, false)
		}
	}
	walk(tool, root, true)
	return problems
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// strictExceptions are the problems the built-in tools still have, each
// with why it stays. A problem not listed fails the test, and so does a
// listed one that is gone.
var strictExceptions = map[string]string{
	// A map of names to values. Gemini's subset has no way to say
	// "any property names, string values"; a client that drops the
	// keyword sends an object without properties, which Gemini refuses.
	// Changing it (to an array of NAME=value strings, say) changes
	// run_bash's arguments.
	`run_bash.env: keyword additionalProperties ({"type":"string"}) is outside Gemini's schema subset`: "env is a map",
	`run_bash.env: an object without properties`:                                                       "env is a map",
}

// TestBuiltinSchemasStrict walks the parameters schema of every tool of
// every built-in plugin, as each plugin's process describes it to the
// host, and fails on what a strict client refuses.
func TestBuiltinSchemasStrict(t *testing.T) {
	t.Parallel()
	dirs, err := os.ReadDir(filepath.Join(plugintest.Root(), "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	var plugins []string
	for _, d := range dirs {
		if d.IsDir() {
			plugins = append(plugins, d.Name())
		}
	}
	if len(plugins) < 4 {
		t.Fatalf("found the plugins %q, want fs, search, bash and session at least", plugins)
	}
	seen := map[string]bool{}
	results := make([][]string, len(plugins))
	t.Run("plugins", func(t *testing.T) {
		for i, name := range plugins {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				desc := plugintest.Describe(t, "./plugins/"+name)
				if len(desc.GetTools()) == 0 {
					t.Errorf("plugin %s describes no tools", name)
				}
				for _, tool := range desc.GetTools() {
					results[i] = append(results[i], strictProblems(tool.GetName(), tool.GetParametersSchema())...)
				}
			})
		}
	})
	for _, problems := range results {
		for _, p := range problems {
			seen[p] = true
			if _, ok := strictExceptions[p]; !ok {
				t.Errorf("%s", p)
			}
		}
	}
	for p := range strictExceptions {
		if !seen[p] {
			t.Errorf("no longer a problem, remove it from strictExceptions: %s", p)
		}
	}
}

// TestInferredSchemasStrict: what inference makes of every kind of field
// passes the strict check, but for a map, which Gemini's subset cannot
// say.
func TestInferredSchemasStrict(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		schema json.RawMessage
		want   []string
	}{
		"fuzzInput": {
			NewTool(Info{Name: "x"}, func(context.Context, fuzzInput) (string, error) { return "", nil }).Schema().Function.Parameters,
			[]string{
				`x.env: keyword additionalProperties ({"type":"string"}) is outside Gemini's schema subset`,
				`x.env: an object without properties`,
			},
		},
		"nullableInput": {
			NewTool(Info{Name: "x"}, func(context.Context, nullableInput) (string, error) { return "", nil }).Schema().Function.Parameters,
			[]string{
				`x.env: keyword additionalProperties ({"type":"string"}) is outside Gemini's schema subset`,
				`x.env: an object without properties`,
			},
		},
		"typedInput": {
			NewTool(Info{Name: "x"}, func(context.Context, typedInput) (string, error) { return "", nil }).Schema().Function.Parameters,
			nil,
		},
		"no arguments": {
			NewTool(Info{Name: "x"}, func(context.Context, struct{}) (string, error) { return "", nil }).Schema().Function.Parameters,
			nil,
		},
		// The checker itself, on what jsonschema.For makes unchanged.
		"type array": {
			json.RawMessage(`{"type":"object","properties":{"p":{"type":["null","array"],"items":{"type":"string"}}},"additionalProperties":false}`),
			[]string{`x.p: type [null array] is not a single type`},
		},
		"null type": {
			json.RawMessage(`{"type":"object","properties":{"p":{"type":"null"},"q":{"description":"any"}}}`),
			[]string{`x.p: type "null"`, `x.q: no type`},
		},
		"outside the subset": {
			json.RawMessage(`{"type":"object","properties":{"p":{"type":"integer","exclusiveMinimum":0}},"required":["p","z"],"additionalProperties":true}`),
			[]string{
				`x: keyword additionalProperties (true) is outside Gemini's schema subset`,
				`x: required z is not a property`,
				`x.p: keyword exclusiveMinimum (0) is outside Gemini's schema subset`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := strictProblems("x", tc.schema)
			if !slices.Equal(got, tc.want) {
				t.Errorf("strictProblems(%s):\n got %q\nwant %q", tc.schema, got, tc.want)
			}
		})
	}
}
