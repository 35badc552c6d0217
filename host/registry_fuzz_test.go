package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/toolcall"
	"github.com/agenthost/agenthost/sdk"
)

// fuzzArgs is a typed tool's input with the kinds of fields tools take.
type fuzzArgs struct {
	Path    string   `json:"path"`
	Limit   int      `json:"limit,omitempty"`
	Count   uint16   `json:"count,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	Timeout *int     `json:"timeout,omitempty"`
	Nested  struct {
		Depth int `json:"depth"`
	} `json:"nested,omitzero"`
}

// FuzzExecuteArguments runs arbitrary arguments through the registry to a
// typed tool and to a tool whose schema the registry checks. Execute never
// panics; a failure is "Error executing NAME: invalid arguments: ...",
// bounded, UTF-8, and never Go's own words; the tools run only with
// arguments that are Unicode text.
func FuzzExecuteArguments(f *testing.F) {
	for _, s := range []string{
		`{"path":"a"}`, `{"path":null}`, `{"path":"a","limit":"3"}`, `{"path":"a","limit":1e30}`,
		`{"path":"a","count":70000}`, `{"path":"a","timeout":1e20}`, `{"path":"a","paths":[null]}`,
		`{"path":"a","nested":{"depth":1e19}}`, `{"path":{"a":1}}`, `{"path":"a","` + strings.Repeat("k", 5000) + `":1}`,
		"{\"path\":\"a\xff\"}", `{"path":"a\ud800"}`, `{"path":"a\ud83d\ude00"}`, `{"path":"a","limit":1e400}`,
		`[]`, `null`, ``, `{`, `{"path":"` + strings.Repeat("é", 3000) + `","limit":true}`,
	} {
		f.Add([]byte(s))
	}
	r := NewToolRegistry(nil)
	ran := func(_ context.Context, in fuzzArgs) (string, error) {
		if strings.ContainsRune(in.Path, utf8.RuneError) {
			return "replaced", nil
		}
		return "ran", nil
	}
	for _, tool := range []ExecutableTool{sdk.NewTool(sdk.Info{Name: "typed"}, ran), &regTool{
		name:   "checked",
		params: `{"type":"object","properties":{"path":{"type":"string","maxLength":10},"limit":{"type":"integer","minimum":0},"paths":{"type":"array","items":{"type":"string"}}},"required":["path"],"additionalProperties":false}`,
		run:    func(context.Context, json.RawMessage) (string, error) { return "ran", nil },
	}} {
		if err := r.Register(tool); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		// U+FFFD reaches a tool only when it was sent as one.
		sentFFFD := strings.Contains(string(args), "\ufffd") || strings.Contains(strings.ToLower(string(args)), `\ufffd`)
		for _, name := range []string{"typed", "checked"} {
			got := r.Execute(t.Context(), name, args)
			if got == "ran" || (got == "replaced" && sentFFFD) {
				continue
			}
			prefix := "Error executing " + name + ": invalid arguments: "
			if !strings.HasPrefix(got, prefix) {
				t.Fatalf("%s(%q) = %.300q", name, args, got)
			}
			if len(got) > len(prefix)+toolcall.MaxMessage || !utf8.ValidString(got) {
				t.Fatalf("%s(%q): a %d-byte answer %.300q", name, args, len(got), got)
			}
			for _, s := range []string{"reflect", "Go struct field", "Go value", "of type", "map[", "<nil>", "%!", "json: ", "interface {}"} {
				if strings.Contains(got, s) {
					t.Fatalf("%s(%q) = %.300q: Go's own text %q", name, args, got, s)
				}
			}
		}
	})
}
