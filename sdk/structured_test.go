package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/toolcall"
)

type countInput struct {
	Words []string `json:"words"`
}

type countMatch struct {
	Word  string `json:"word" jsonschema:"the word"`
	Count int    `json:"count"`
}

type countOutput struct {
	Total   int            `json:"total" jsonschema:"how many words"`
	Matches []countMatch   `json:"matches"`
	ByFirst map[string]int `json:"by_first"`
	Note    string         `json:"note,omitempty"`
	Tags    []string       `json:"tags,omitempty"`
}

// newCountTool returns a structured tool that counts its words; "fail"
// among them fails the call.
func newCountTool() Tool {
	return NewStructuredTool(Info{Name: "count", Title: "Count words", Description: "Count words."},
		func(_ context.Context, in countInput) (string, countOutput, error) {
			out := countOutput{Total: len(in.Words)}
			for _, w := range in.Words {
				if w == "fail" {
					return "partial", out, errors.New("told to fail")
				}
				out.Matches = append(out.Matches, countMatch{Word: w, Count: 1})
			}
			return strings.Join(in.Words, " "), out, nil
		})
}

func TestNewStructuredToolSchemas(t *testing.T) {
	t.Parallel()
	tool := newCountTool()
	st, ok := tool.(StructuredTool)
	if !ok {
		t.Fatalf("%T does not implement StructuredTool", tool)
	}
	want := `{"type":"object","properties":{` +
		`"total":{"type":"integer","description":"how many words"},` +
		`"matches":{"type":"array","items":{"type":"object","properties":{"word":{"type":"string","description":"the word"},"count":{"type":"integer"}},"required":["word","count"],"additionalProperties":false}},` +
		`"by_first":{"type":"object","additionalProperties":{"type":"integer"}},` +
		`"note":{"type":"string"},` +
		`"tags":{"type":"array","items":{"type":"string"}}},` +
		`"required":["total","matches","by_first"],"additionalProperties":false}`
	if got := string(st.OutputSchema()); got != want {
		t.Errorf("OutputSchema:\n got %s\nwant %s", got, want)
	}
	if got := string(OutputSchemaOf(tool)); got != want {
		t.Errorf("OutputSchemaOf = %s", got)
	}
	if got := TitleOf(tool); got != "Count words" {
		t.Errorf("TitleOf = %q, want %q", got, "Count words")
	}
	if _, ok := tool.(toolcall.Preparer); !ok {
		t.Error("a structured tool checks its arguments as NewTool's do, but is no toolcall.Preparer")
	}
	params := string(tool.Schema().Function.Parameters)
	if !strings.Contains(params, `"words":{"type":"array","items":{"type":"string"}}`) {
		t.Errorf("parameters schema %s", params)
	}
}

func TestNewToolTitle(t *testing.T) {
	t.Parallel()
	plain := NewTool(Info{Name: "plain"}, func(context.Context, struct{}) (string, error) { return "", nil })
	titled := NewTool(Info{Name: "titled", Title: "A title"}, func(context.Context, struct{}) (string, error) { return "", nil })
	tests := map[string]struct {
		tool        Tool
		title       string
		output      bool
		implemented bool
	}{
		"no title":   {plain, "", false, false},
		"title":      {titled, "A title", false, false},
		"structured": {newCountTool(), "Count words", true, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := TitleOf(tc.tool); got != tc.title {
				t.Errorf("TitleOf = %q, want %q", got, tc.title)
			}
			if got := OutputSchemaOf(tc.tool) != nil; got != tc.output {
				t.Errorf("OutputSchemaOf non-nil = %v, want %v", got, tc.output)
			}
			if _, got := tc.tool.(StructuredTool); got != tc.implemented {
				t.Errorf("implements StructuredTool = %v, want %v", got, tc.implemented)
			}
		})
	}
}

func TestNewStructuredToolResults(t *testing.T) {
	t.Parallel()
	tool := newCountTool()
	st := tool.(StructuredTool)
	resolved := resolveOutput(t, st)
	tests := map[string]struct {
		args, text, structured, err string
	}{
		"words": {
			args:       `{"words":["a","b"]}`,
			text:       "a b",
			structured: `{"by_first":{},"matches":[{"word":"a","count":1},{"word":"b","count":1}],"total":2}`,
		},
		// nil slices and maps the schema requires are empty, not null.
		"none": {args: `{"words":[]}`, text: "", structured: `{"by_first":{},"matches":[],"total":0}`},
		// A failure has no structured result.
		"error":             {args: `{"words":["x","fail"]}`, text: "partial", err: "told to fail"},
		"invalid arguments": {args: `{"words":3}`, err: "invalid arguments: words: type: 3 has type \"integer\", want \"array\""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			text, structured, err := st.ExecuteStructured(t.Context(), json.RawMessage(tc.args))
			check := func(way, text string, structured json.RawMessage, err error) {
				t.Helper()
				if tc.err != "" {
					if err == nil || err.Error() != tc.err || structured != nil {
						t.Errorf("%s = %q, %s, %v; want no structured result and error %q", way, text, structured, err, tc.err)
					}
					return
				}
				if err != nil || text != tc.text || string(structured) != tc.structured {
					t.Errorf("%s = %q, %s, %v; want %q, %s", way, text, structured, err, tc.text, tc.structured)
				}
				if err := ValidateStructured(resolved, structured); err != nil {
					t.Errorf("%s: the structured result does not conform: %v", way, err)
				}
			}
			check("ExecuteStructured", text, structured, err)
			// The registry's way in answers alike.
			if call, err := tool.(toolcall.Preparer).PrepareCall(json.RawMessage(tc.args)); err != nil {
				check("PrepareCall", "", nil, err)
			} else {
				text, structured, err := call(t.Context())
				check("PrepareCall's call", text, structured, err)
			}
			// Execute gives the text alone.
			if got, err := tool.Execute(t.Context(), json.RawMessage(tc.args)); tc.err == "" && (err != nil || got != tc.text) {
				t.Errorf("Execute = %q, %v; want %q", got, err, tc.text)
			}
		})
	}
}

func resolveOutput(t *testing.T, st StructuredTool) *jsonschema.Resolved {
	t.Helper()
	return plugintest.ResolveSchema(t, st.OutputSchema())
}

// selfEncoded is a structured result that encodes itself.
type selfEncoded struct {
	Items []string `json:"items"`
}

// MarshalJSON writes the items' count, with a space that encoding/json
// would take out: what it writes is the result, as it is.
func (s selfEncoded) MarshalJSON() ([]byte, error) {
	return []byte(`{"count": ` + strconv.Itoa(len(s.Items)) + `}`), nil
}

// TestNewStructuredToolMarshaler checks that a result type that
// implements json.Marshaler is its MarshalJSON's bytes, as they are.
func TestNewStructuredToolMarshaler(t *testing.T) {
	t.Parallel()
	tool := NewStructuredTool(Info{Name: "self", Description: "Encode itself."},
		func(_ context.Context, in countInput) (string, selfEncoded, error) {
			return "text", selfEncoded{Items: in.Words}, nil
		}).(StructuredTool)
	for args, want := range map[string]string{
		`{"words":["a","b"]}`: `{"count": 2}`,
		`{"words":[]}`:        `{"count": 0}`,
	} {
		text, structured, err := tool.ExecuteStructured(t.Context(), json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		if text != "text" || string(structured) != want {
			t.Errorf("ExecuteStructured(%s) = %q, %s; want %q, %s", args, text, structured, "text", want)
		}
	}
}

// TestValidateStructured checks ValidateStructured's answers (the host's
// faster check, internal/structcheck, is checked against it there).
func TestValidateStructured(t *testing.T) {
	t.Parallel()
	resolved := resolveOutput(t, newCountTool().(StructuredTool))
	tests := map[string]struct{ structured, want string }{
		"conforms":      {`{"total":0,"matches":[],"by_first":{}}`, ""},
		"not JSON":      {`{"total":`, "the structured result is not JSON: unexpected end of JSON input"},
		"not an object": {`[1]`, "the structured result is an array, not a JSON object"},
		"wrong type":    {`{"total":"x","matches":[],"by_first":{}}`, `the structured result does not conform to the output schema: total: type: x has type "string", want "integer"`},
		"fraction":      {`{"total":1.5,"matches":[],"by_first":{}}`, `the structured result does not conform to the output schema: total: type: 1.5 has type "number", want "integer"`},
		"missing":       {`{"total":1}`, `the structured result does not conform to the output schema: required: missing properties: ["matches" "by_first"]`},
		"extra":         {`{"total":0,"matches":[],"by_first":{},"more":1}`, `the structured result does not conform to the output schema: unexpected additional properties ["more"]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for way, validate := range map[string]func(json.RawMessage) error{
				"ValidateStructured": func(s json.RawMessage) error { return ValidateStructured(resolved, s) },
			} {
				err := validate(json.RawMessage(tc.structured))
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s(%s) = %v, want nil", way, tc.structured, err)
				case tc.want != "" && (err == nil || err.Error() != tc.want):
					t.Errorf("%s(%s) = %v, want %q", way, tc.structured, err, tc.want)
				}
			}
		})
	}
}

func TestNewStructuredToolPanics(t *testing.T) {
	t.Parallel()
	tests := map[string]func(){
		"output not a struct": func() {
			NewStructuredTool(Info{Name: "x"}, func(context.Context, struct{}) (string, []string, error) { return "", nil, nil })
		},
		"invalid name": func() {
			NewStructuredTool(Info{Name: "a b"}, func(context.Context, struct{}) (string, struct{}, error) { return "", struct{}{}, nil })
		},
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}
