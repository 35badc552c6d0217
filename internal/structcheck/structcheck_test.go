package structcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// Schemas beside the built-ins' that the differential tests check
// StructuredValidator against ValidateStructured with: what the
// built-ins do not use of what a shape compiles (type arrays, numbers,
// minimum and maximum, additionalProperties as a schema, the empty
// schema, nested arrays, a draft-07 schema as MCP servers written with
// zod send), and keywords a shape leaves to ValidateStructured.
var extraOutputSchemas = map[string]string{
	"kinds": `{"type":"object","properties":{
		"n":{"type":["integer","null"],"minimum":1,"maximum":10},
		"x":{"type":"number","minimum":-1.5,"maximum":1e300},
		"m":{"type":"object","additionalProperties":{"type":"integer"}},
		"any":{},
		"l":{"type":"array","items":{"type":"array","items":{"type":"string"}}},
		"b":{"type":"boolean"},
		"s":{"type":["string","boolean"]}},
		"required":["n","m"]}`,
	"draft07": `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
		"content":{"type":"array","items":{"type":"object","properties":{
			"type":{"type":"string"},"text":{"type":"string"}},
			"required":["type","text"],"additionalProperties":false}},
		"isError":{"type":"boolean"}},
		"required":["content"],"additionalProperties":false}`,
	"open": `{"type":"object","properties":{"v":{"description":"anything"},"o":{"properties":{"k":{"type":"string"}},"required":["k"]}},"additionalProperties":true}`,
	"enum": `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]},"n":{"type":"integer"}},"required":["mode"]}`,
}

// outputSchemas returns the built-ins' output schemas and the extra
// ones, by name, resolved, and their structured results from the
// testdata.
func outputSchemas(tb testing.TB) (names []string, schemas map[string]*jsonschema.Resolved, results map[string][]json.RawMessage) {
	tb.Helper()
	schemas, results = map[string]*jsonschema.Resolved{}, map[string][]json.RawMessage{}
	for _, c := range structuredCases(tb) {
		tool, _, _ := strings.Cut(c.name, "/")
		if schemas[tool] == nil {
			schemas[tool] = plugintest.ResolveSchema(tb, c.schema)
		}
		results[tool] = append(results[tool], c.result)
	}
	for name, raw := range extraOutputSchemas {
		schemas[name] = plugintest.ResolveSchema(tb, json.RawMessage(raw))
	}
	for name := range schemas {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, schemas, results
}

// TestStructuredValidatorCompiles checks which schemas a shape compiles:
// all the built-ins' and the extra ones but "enum", which
// ValidateStructured is left to; and that the shapes accept every real
// result of the built-ins without ValidateStructured.
func TestStructuredValidatorCompiles(t *testing.T) {
	t.Parallel()
	names, schemas, results := outputSchemas(t)
	for _, name := range names {
		v := New(schemas[name])
		if compiled, want := v.shape != nil, name != "enum"; compiled != want {
			t.Errorf("%s: compiled to a shape: %v, want %v", name, compiled, want)
			continue
		}
		for _, result := range results[name] {
			if !v.shape.accepts(result) {
				t.Errorf("%s: the shape refuses a real result: %s", name, result)
			}
		}
	}
}

// TestStructuredValidatorAgrees is the differential test: over many
// JSON texts generated from each schema, mostly conforming, with
// deviations of every kind (wrong types, missing and extra properties,
// keys given twice or with escapes, numbers as 1.0, 1e2, -0 or beyond
// float64, invalid UTF-8, broken syntax), StructuredValidator answers
// exactly what ValidateStructured does.
func TestStructuredValidatorAgrees(t *testing.T) {
	t.Parallel()
	names, schemas, _ := outputSchemas(t)
	rng := rand.New(rand.NewPCG(18, 6))
	for _, name := range names {
		v := New(schemas[name])
		var fast, valid, invalid int
		for range 3000 {
			doc := generateJSON(rng, schemas[name].Schema())
			agree(t, name, v, schemas[name], doc)
			if v.shape != nil && v.shape.accepts(doc) {
				fast++
			}
			if sdk.ValidateStructured(schemas[name], doc) == nil {
				valid++
			} else {
				invalid++
			}
		}
		// The generated texts must try both answers, and the shape must
		// judge most conforming ones itself.
		if valid == 0 || invalid == 0 || v.shape != nil && fast < valid/2 {
			t.Errorf("%s: %d texts conform, %d do not, the shape accepts %d: the generator does not test both ways", name, valid, invalid, fast)
		}
	}
}

// TestStructuredValidatorDeep checks results nested deeper than a shape
// judges, and deeper than encoding/json reads (10000): the one refuses
// what the other does.
func TestStructuredValidatorDeep(t *testing.T) {
	t.Parallel()
	resolved := plugintest.ResolveSchema(t, json.RawMessage(extraOutputSchemas["open"]))
	v := New(resolved)
	for _, depth := range []int{maxShapeDepth - 2, maxShapeDepth + 1, 10001} {
		doc := `{"v":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
		agree(t, "open", v, resolved, []byte(doc))
	}
}

// agree checks that v accepts doc exactly when ValidateStructured
// does. Their errors are not compared: v's are ValidateStructured's,
// whose text varies from call to call when a result breaks the schema
// in more than one place (it checks properties in map order).
func agree(t *testing.T, name string, v *Validator, resolved *jsonschema.Resolved, doc []byte) {
	t.Helper()
	got, want := v.Validate(doc), sdk.ValidateStructured(resolved, doc)
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: Validate(%s) = %v; ValidateStructured says %v", name, doc, got, want)
	}
}

// FuzzStructuredValidator checks StructuredValidator against
// ValidateStructured on any text, with each schema of
// TestStructuredValidatorAgrees. The seed corpus is the built-ins' real
// results and texts generated from each schema.
func FuzzStructuredValidator(f *testing.F) {
	names, schemas, results := outputSchemas(f)
	validators := make([]*Validator, len(names))
	rng := rand.New(rand.NewPCG(18, 6))
	for i, name := range names {
		validators[i] = New(schemas[name])
		for _, result := range results[name] {
			f.Add(uint8(i), []byte(result))
		}
		for range 4 {
			f.Add(uint8(i), generateJSON(rng, schemas[name].Schema()))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, doc []byte) {
		i := int(which) % len(names)
		agree(t, names[i], validators[i], schemas[names[i]], doc)
	})
}

// generateJSON writes a JSON text for s, an object schema: mostly one
// that conforms, with a deviation now and then, and at times text that
// is not JSON.
func generateJSON(rng *rand.Rand, s *jsonschema.Schema) []byte {
	var b bytes.Buffer
	g := generator{rng: rng, b: &b}
	g.value(s, 0)
	doc := b.Bytes()
	switch n := rng.IntN(40); {
	case n == 0 && len(doc) > 1:
		doc = doc[:rng.IntN(len(doc))]
	case n == 1:
		at := rng.IntN(len(doc) + 1)
		const junk = ",}]\"\\:x \x00"
		doc = slices.Insert(doc, at, junk[rng.IntN(len(junk))])
	case n == 2:
		doc = append(doc, " x"[rng.IntN(2)])
	case n == 3:
		doc = append([]byte(" \t\r\n"), doc...)
	}
	return doc
}

// A generator writes JSON text for schemas.
type generator struct {
	rng *rand.Rand
	b   *bytes.Buffer
}

// wild are values of every kind, and in every form, that a generator
// writes in place of the one a schema asks for, now and then.
var wild = []string{
	`null`, `true`, `false`, `0`, `-0`, `7`, `-3`, `1.0`, `1e2`, `1E+2`, `2.5`, `-1.5e-3`, `1e400`, `-1e400`, `1e-400`,
	`12345678901234567890`, `999999999999999`, `9007199254740993`, `""`, `"s"`, `"\u00e9\ud800"`, `"\n"`, "\"\xff\"",
	`[]`, `[1,"a",null]`, `{}`, `{"a":{"b":[]}}`, `01`, `1.`, `.5`, `+1`, `"\x"`, `tru`, `[1,]`, `{"a":1,}`,
}

// numbers are the numbers a generator writes for a number schema.
var numbers = []string{`0`, `-0`, `1`, `5`, `10`, `11`, `-1`, `-2`, `1.0`, `1.5`, `-1.5`, `-1.50001`, `1e1`, `1e2`, `10.0`, `2e-1`, `1e300`, `1e301`, `123456789012345`, `1234567890123456789`, `1e400`}

// strs are the strings a generator writes for a string schema.
var strs = []string{`""`, `"file"`, `"directory"`, `"a\"b"`, `"\\"`, `"\u0041"`, `"é"`, "\"\xc3\"", `"\/"`, `"tab\t"`, "\"raw\ttab\"", "\"\x1f\"", "\"\x7f\""}

func (g *generator) pick(list []string) { g.b.WriteString(list[g.rng.IntN(len(list))]) }

// space writes white space, at times.
func (g *generator) space() {
	if g.rng.IntN(8) == 0 {
		g.b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[g.rng.IntN(4)])
	}
}

// value writes a value for s: one of its types.
func (g *generator) value(s *jsonschema.Schema, depth int) {
	g.space()
	defer g.space()
	if s == nil || depth > 6 || g.rng.IntN(60) == 0 {
		g.pick(wild)
		return
	}
	if len(s.Enum) > 0 && g.rng.IntN(8) != 0 {
		value, _ := json.Marshal(s.Enum[g.rng.IntN(len(s.Enum))])
		g.b.Write(value)
		return
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 {
		types = []string{"null", "boolean", "integer", "number", "string", "array", "object"}
	}
	switch types[g.rng.IntN(len(types))] {
	case "null":
		g.b.WriteString("null")
	case "boolean":
		g.pick([]string{"true", "false"})
	case "integer", "number":
		g.pick(numbers)
	case "string":
		g.pick(strs)
	case "array":
		g.array(s, depth)
	case "object":
		g.object(s, depth)
	}
}

func (g *generator) array(s *jsonschema.Schema, depth int) {
	g.b.WriteByte('[')
	for i := range g.rng.IntN(4) {
		if i > 0 {
			g.b.WriteByte(',')
		}
		g.value(s.Items, depth+1)
	}
	g.b.WriteByte(']')
}

func (g *generator) object(s *jsonschema.Schema, depth int) {
	g.b.WriteByte('{')
	first := true
	member := func(key string, value *jsonschema.Schema) {
		if !first {
			g.b.WriteByte(',')
		}
		first = false
		g.space()
		g.b.WriteString(key)
		g.space()
		g.b.WriteByte(':')
		g.value(value, depth+1)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		required := slices.Contains(s.Required, name)
		if required && g.rng.IntN(50) == 0 || !required && g.rng.IntN(2) == 0 {
			continue
		}
		member(g.key(name), s.Properties[name])
		if g.rng.IntN(40) == 0 { // the key again
			member(g.key(name), s.Properties[name])
		}
	}
	extra := g.rng.IntN(30) == 0
	if s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties) {
		extra = g.rng.IntN(2) == 0
	}
	if extra {
		for range 1 + g.rng.IntN(3) {
			member(g.key([]string{"zz", "é", "k1", "name"}[g.rng.IntN(4)]), s.AdditionalProperties)
		}
	}
	g.b.WriteByte('}')
}

// key writes name as a JSON string, at times with escapes, or not UTF-8.
func (g *generator) key(name string) string {
	switch g.rng.IntN(40) {
	case 0:
		return fmt.Sprintf(`"\u%04x%s"`, name[0], name[1:])
	case 1:
		return `"` + name + "\xff\""
	}
	quoted, _ := json.Marshal(name)
	return string(quoted)
}
