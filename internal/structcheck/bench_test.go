package structcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// A structured case is a built-in tool's output schema and one of its
// real structured results, as the plugins answered them, in
// testdata/structured/TOOL: schema.json and the results beside it.
type structuredCase struct {
	name   string // TOOL/RESULT
	schema json.RawMessage
	result json.RawMessage
}

// structuredCases reads the testdata's schemas and results.
func structuredCases(tb testing.TB) []structuredCase {
	tb.Helper()
	schemas, err := filepath.Glob(filepath.Join("testdata", "structured", "*", "schema.json"))
	if err != nil || len(schemas) == 0 {
		tb.Fatalf("no output schemas in testdata/structured: %v", err)
	}
	var cases []structuredCase
	for _, path := range schemas {
		dir := filepath.Dir(path)
		schema := readTestdata(tb, path)
		results, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, r := range results {
			if r == path {
				continue
			}
			name := filepath.Base(dir) + "/" + strings.TrimSuffix(filepath.Base(r), ".json")
			cases = append(cases, structuredCase{name: name, schema: schema, result: readTestdata(tb, r)})
		}
	}
	return cases
}

func readTestdata(tb testing.TB, path string) json.RawMessage {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return json.RawMessage(data)
}

// resolveSchema resolves raw, an output schema.

// BenchmarkValidateStructured measures the host's check of a structured
// result against its tool's output schema (StructuredValidator), on the
// built-ins' real results: list_dir's of 200 entries (flat with sizes,
// and a tree of depth 2 names only), file_info's, search_text's,
// search_files'.
func BenchmarkValidateStructured(b *testing.B) {
	for _, c := range structuredCases(b) {
		v := New(plugintest.ResolveSchema(b, c.schema))
		benchmarkStructured(b, c, v.Validate)
	}
}

// BenchmarkValidateStructuredGeneral measures ValidateStructured, the
// general validator that StructuredValidator leaves what it cannot
// judge to, on the same results.
func BenchmarkValidateStructuredGeneral(b *testing.B) {
	for _, c := range structuredCases(b) {
		resolved := plugintest.ResolveSchema(b, c.schema)
		benchmarkStructured(b, c, func(structured json.RawMessage) error { return sdk.ValidateStructured(resolved, structured) })
	}
}

func benchmarkStructured(b *testing.B, c structuredCase, validate func(json.RawMessage) error) {
	b.Run(c.name, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(c.result)))
		for b.Loop() {
			if err := validate(c.result); err != nil {
				b.Fatal(err)
			}
		}
	})
}
