package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/argcheck"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// nullableInput has every kind of field jsonschema.For makes nullable.
type nullableInput struct {
	Path     string            `json:"path"`
	Paths    []string          `json:"paths,omitempty"`
	Timeout  *int              `json:"timeout,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Pointers []*string         `json:"pointers,omitempty"`
	Deep     *[]int            `json:"deep,omitempty"`
	Need     []string          `json:"need"`
	Items    []struct {
		Name string `json:"name"`
		Note string `json:"note,omitempty"`
	} `json:"items,omitempty"`
}

// TestNewToolSchemaSingleTypes: slices, maps and pointers have their one
// non-null type, and only the omit* fields are optional.
func TestNewToolSchemaSingleTypes(t *testing.T) {
	t.Parallel()
	tool := NewTool(Info{Name: "n"}, func(context.Context, nullableInput) (string, error) { return "", nil })
	var params struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(tool.Schema().Function.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"paths":    `{"type":"array","items":{"type":"string"}}`,
		"timeout":  `{"type":"integer"}`,
		"env":      `{"type":"object","additionalProperties":{"type":"string"}}`,
		"pointers": `{"type":"array","items":{"type":"string"}}`,
		"deep":     `{"type":"array","items":{"type":"integer"}}`,
		"need":     `{"type":"array","items":{"type":"string"}}`,
		"items": `{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string"}},` +
			`"required":["name"],"additionalProperties":false}}`,
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := string(params.Properties[name]); got != want {
				t.Errorf("property %s:\n got %s\nwant %s", name, got, want)
			}
		})
	}
	if got := strings.Join(params.Required, ","); got != "path,need" {
		t.Errorf("required = %s, want path,need", got)
	}
}

// TestNewToolNullOptional: a null optional argument is an absent one,
// at the top and within objects; a null required argument, or a null
// item, is refused.
func TestNewToolNullOptional(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args    string
		want    string // the handler's answer, or the error
		wantErr bool
	}{
		"optional slice null":      {`{"path":"a","need":[],"paths":null}`, `paths=[] timeout=<nil> env=map[] deep=<nil>`, false},
		"optional pointer null":    {`{"path":"a","need":[],"timeout":null}`, `paths=[] timeout=<nil> env=map[] deep=<nil>`, false},
		"optional map null":        {`{"path":"a","need":[],"env":null}`, `paths=[] timeout=<nil> env=map[] deep=<nil>`, false},
		"pointer to slice null":    {`{"path":"a","need":[],"deep":null}`, `paths=[] timeout=<nil> env=map[] deep=<nil>`, false},
		"all optional null":        {`{"path":"a","need":[],"paths":null,"timeout":null,"env":null,"pointers":null,"deep":null,"items":null}`, `paths=[] timeout=<nil> env=map[] deep=<nil>`, false},
		"values kept":              {`{"path":"a","need":["n"],"paths":["p"],"timeout":5,"env":{"K":"null"},"deep":[1]}`, `paths=[p] timeout=5 env=map[K:null] deep=[1]`, false},
		"nested optional null":     {`{"path":"a","need":[],"items":[{"name":"x","note":null}]}`, `paths=[] timeout=<nil> env=map[] deep=<nil>`, false},
		"required null":            {`{"path":null,"need":[]}`, `invalid arguments: path: type: null has type "null", want "string"`, true},
		"required slice null":      {`{"path":"a","need":null}`, `invalid arguments: need: type: null has type "null", want "array"`, true},
		"nested required null":     {`{"path":"a","need":[],"items":[{"name":null}]}`, `invalid arguments: items[].name: type: null has type "null", want "string"`, true},
		"null item":                {`{"path":"a","need":[],"paths":[null]}`, `invalid arguments: paths[]: type: null has type "null", want "string"`, true},
		"null pointer item":        {`{"path":"a","need":[],"pointers":[null]}`, `invalid arguments: pointers[]: type: null has type "null", want "string"`, true},
		"null map value":           {`{"path":"a","need":[],"env":{"K":null}}`, `invalid arguments: "env.*": type: null has type "null", want "string"`, true},
		"unknown null still extra": {`{"path":"a","need":[],"other":null}`, `invalid arguments: unexpected additional properties ["other"]`, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool := NewTool(Info{Name: "n"}, func(_ context.Context, in nullableInput) (string, error) {
				timeout := "<nil>"
				if in.Timeout != nil {
					timeout = fmt.Sprint(*in.Timeout)
				}
				deep := "<nil>"
				if in.Deep != nil {
					deep = fmt.Sprint(*in.Deep)
				}
				return fmt.Sprintf("paths=%v timeout=%s env=%v deep=%s", in.Paths, timeout, in.Env, deep), nil
			})
			got, err := tool.Execute(t.Context(), json.RawMessage(tc.args))
			if tc.wantErr {
				if err == nil || err.Error() != tc.want {
					t.Errorf("Execute(%s) = %q, %v; want error %q", tc.args, got, err, tc.want)
				}
			} else if err != nil || got != tc.want {
				t.Errorf("Execute(%s) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
			// The registry's way in answers alike.
			call, err := tool.(toolcall.Preparer).PrepareCall(json.RawMessage(tc.args))
			if tc.wantErr {
				if err == nil || err.Error() != tc.want {
					t.Errorf("PrepareCall(%s) error %v, want %q", tc.args, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("PrepareCall(%s): %v", tc.args, err)
			}
			if got, _, err := call(t.Context()); err != nil || got != tc.want {
				t.Errorf("PrepareCall(%s) call = %q, %v; want %q", tc.args, got, err, tc.want)
			}
		})
	}
}

// TestValidateArgsNullAsSchemaSays: argcheck.Check, the host's check of a
// plugin that does not check its own arguments, keeps to the schema: a
// null is refused where the schema does not allow it, since the tool
// would receive it.
func TestValidateArgsNullAsSchemaSays(t *testing.T) {
	t.Parallel()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"limit":{"type":"integer"}},"additionalProperties":false}`), &s); err != nil {
		t.Fatal(err)
	}
	schema, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `invalid arguments: limit: type: null has type "null", want "integer"`
	if err := argcheck.Check(schema, json.RawMessage(`{"limit":null}`)); err == nil || err.Error() != want {
		t.Errorf("ValidateArgs({\"limit\":null}) = %v, want %q", err, want)
	}
	if err := argcheck.Check(schema, json.RawMessage(`{}`)); err != nil {
		t.Errorf("ValidateArgs({}) = %v, want nil", err)
	}
}
