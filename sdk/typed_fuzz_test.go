package sdk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/argcheck"
)

// fuzzInput has a field of every kind a tool's input commonly has.
type fuzzInput struct {
	Path    string            `json:"path"`
	Limit   int               `json:"limit,omitempty"`
	Small   int8              `json:"small,omitempty"`
	Count   uint32            `json:"count,omitempty"`
	Ratio   float32           `json:"ratio,omitempty"`
	Flag    bool              `json:"flag,omitempty"`
	Paths   []string          `json:"paths,omitempty"`
	Timeout *int              `json:"timeout,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Nested  struct {
		Depth int    `json:"depth"`
		Name  string `json:"name,omitempty"`
	} `json:"nested,omitzero"`
}

// maxFuzzError bounds every argument-check error.
const maxFuzzError = argcheck.MaxError + 64

// rawGoText are fragments of Go's own error texts that must never reach a
// model.
var rawGoText = []string{"reflect", "Go struct field", "Go value", "of type", "map[", "<nil>", "%!", "json: ", "interface {}", "/1 is"}

// argumentSeeds are the bad inputs found against the tools: wrong types,
// nulls, huge keys and numbers, invalid UTF-8, lone surrogates.
var argumentSeeds = []string{
	`{"path":"a"}`,
	`{"path":null}`,
	`{"path":"a","limit":null}`,
	`{"path":"a","limit":"3"}`,
	`{"path":"a","limit":1.5}`,
	`{"path":"a","limit":2.0}`,
	`{"path":"a","limit":1e30}`,
	`{"path":"a","limit":9223372036854775808}`,
	`{"path":"a","limit":-9223372036854775809}`,
	`{"path":"a","small":300}`,
	`{"path":"a","count":-1}`,
	`{"path":"a","count":4294967296}`,
	`{"path":"a","ratio":1e39}`,
	`{"path":"a","ratio":1e400}`,
	`{"path":"a","timeout":1e20}`,
	`{"path":"a","paths":[null]}`,
	`{"path":"a","paths":"x"}`,
	`{"path":"a","env":{"A":1}}`,
	`{"path":"a","nested":null}`,
	`{"path":"a","nested":{"depth":null}}`,
	`{"path":"a","nested":{"depth":1e20}}`,
	`{"path":{"a":1}}`,
	`{"path":[1,2]}`,
	`{"path":"a","` + strings.Repeat("k", 5000) + `":1}`,
	`{"path":"` + strings.Repeat("9", 5000) + `","limit":"` + strings.Repeat("9", 5000) + `"}`,
	`{"path":"a","limit":` + strings.Repeat("9", 5000) + `}`,
	"{\"path\":\"a\xffb\"}",
	"{\"pa\xffth\":\"a\"}",
	`{"path":"a\ud800"}`,
	`{"path":"a\udc00\ud800"}`,
	`{"path":"\\ud800"}`,
	`{"path":"a\ud83d\ude00"}`,
	`[]`, `"s"`, `42`, `true`, `null`, ``, `{`, `{"path":"a",}`, `{"path":"a"}{}`,
}

// FuzzTypedToolArguments feeds a typed tool arbitrary arguments: it never
// panics, runs its handler only with arguments that decoded, and fails
// with a bounded "invalid arguments: " message in JSON's words, never in
// Go's.
func FuzzTypedToolArguments(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add([]byte(s))
	}
	tool := NewTool(Info{Name: "fuzz"}, func(_ context.Context, in fuzzInput) (string, error) { return "ran", nil })
	f.Fuzz(func(t *testing.T, args []byte) {
		out, err := tool.Execute(t.Context(), args)
		if err == nil {
			if out != "ran" {
				t.Fatalf("Execute(%q) = %q", args, out)
			}
			return
		}
		checkArgumentError(t, args, err.Error())
	})
}

// FuzzValidateArgs checks arbitrary arguments against a hand-written
// schema, as the host does for a plugin that does not check its own.
func FuzzValidateArgs(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add([]byte(s))
	}
	schema := resolveForTest(f, `{"type":"object","properties":{"path":{"type":"string","minLength":1,"pattern":"^[a-z]+$"},"limit":{"type":"integer","minimum":1,"maximum":100},"mode":{"enum":["a","b"]},"paths":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["path"],"additionalProperties":false}`)
	f.Fuzz(func(t *testing.T, args []byte) {
		if err := argcheck.Check(schema, NormalizeArgs(args)); err != nil {
			checkArgumentError(t, args, err.Error())
		}
	})
}

func resolveForTest(f *testing.F, schema string) *jsonschema.Resolved {
	f.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		f.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	return r
}

func checkArgumentError(t *testing.T, args []byte, msg string) {
	t.Helper()
	if !strings.HasPrefix(msg, "invalid arguments: ") {
		t.Fatalf("arguments %.200q: error %.300q does not start with \"invalid arguments: \"", args, msg)
	}
	if len(msg) > maxFuzzError {
		t.Fatalf("arguments %.200q: a %d-byte error: %.300q", args, len(msg), msg)
	}
	if !utf8.ValidString(msg) {
		t.Fatalf("arguments %.200q: error %q is not UTF-8", args, msg)
	}
	for _, s := range rawGoText {
		if strings.Contains(msg, s) {
			t.Fatalf("arguments %.200q: error %.300q holds Go's own text %q", args, msg, s)
		}
	}
}
