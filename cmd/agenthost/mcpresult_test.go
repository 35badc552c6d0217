package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// marshalAsSDK marshals a result as the SDK's JSON-RPC layer does: an
// encoder without HTML escaping, its newline trimmed.
func marshalAsSDK(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestCallResultBytes checks that a result wrapped by fastResult is
// sent byte for byte as the SDK sends it, on the fast path and on every
// way off it.
func TestCallResultBytes(t *testing.T) {
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	// complete is a result as the SDK shapes it for protocol 2026-07-28
	// and later, with its resultType.
	complete := func(structured any) *mcp.CallToolResult {
		var r mcp.CallToolResult
		if err := json.Unmarshal([]byte(`{"content":[{"type":"text","text":"a\nb <c>"}],"resultType":"complete"}`), &r); err != nil {
			t.Fatal(err)
		}
		r.StructuredContent = structured
		return &r
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		fast bool // encoded here rather than by the SDK
	}{
		{"text only", &mcp.CallToolResult{Content: text("dir/\nfile (3 B)\n")}, true},
		{"text to escape", &mcp.CallToolResult{Content: text("a -> b & <c> \"q\" \\ \t\u2028\u2029 \x00 \xff end")}, true},
		{"empty text", &mcp.CallToolResult{Content: text("")}, true},
		{"error", &mcp.CallToolResult{Content: text("Error executing x: no"), IsError: true}, true},
		{"structured", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"path":"d","entries":[{"name":"a b","type":"file","size":3}],"more":0}`)}, true},
		{"structured with escapes", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"a":"q\" \\ \u003c \u2028 x","b":[1,2.5e3,true,null,{}]}`)}, true},
		{"structured, resultType", complete(raw(`{"n":1}`)), true},
		{"resultType", complete(nil), true},
		{"structured with spaces", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{ "a": [1, 2] }`)}, false},
		{"structured with a line break", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw("{\"a\":\n1}")}, false},
		{"structured with <", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"a":"<b>"}`)}, false},
		{"structured with &", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"a":"b&c"}`)}, false},
		{"structured with U+2028", &mcp.CallToolResult{Content: text("x"), StructuredContent: raw("{\"a\":\"b\u2028c\"}")}, false},
		{"structured as a map", &mcp.CallToolResult{Content: text("x"), StructuredContent: map[string]any{"a": "<b>"}}, false},
		{"two contents", &mcp.CallToolResult{Content: append(text("a"), &mcp.TextContent{Text: "b"})}, false},
		{"no content", &mcp.CallToolResult{Content: []mcp.Content{}}, false},
		{"annotated text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}}, false},
		{"meta", &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: text("a")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := marshalAsSDK(t, c.res)
			wrapped := fastResult(c.res)
			if _, ok := wrapped.(callResult); !ok {
				t.Fatalf("fastResult returned %T, want a callResult", wrapped)
			}
			if got := marshalAsSDK(t, wrapped); !bytes.Equal(got, want) {
				t.Errorf("sent as\n%s\nthe SDK sends\n%s", got, want)
			}
			direct, err := wrapped.(callResult).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			sdk, err := c.res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(direct, sdk) {
				t.Errorf("MarshalJSON\n%s\nthe SDK's\n%s", direct, sdk)
			}
			if s, ok := c.res.StructuredContent.(json.RawMessage); ok && compactHTMLSafe(s) != c.fast {
				t.Errorf("compactHTMLSafe(%s) = %v, want %v", s, !c.fast, c.fast)
			}
		})
	}
}

// TestFastResultOthers checks that fastResult leaves other results, and
// no result, alone.
func TestFastResultOthers(t *testing.T) {
	if got := fastResult(nil); got != nil {
		t.Errorf("fastResult(nil) = %#v", got)
	}
	other := &mcp.ListToolsResult{}
	if got := fastResult(other); got != mcp.Result(other) {
		t.Errorf("fastResult(%T) = %T, want it unchanged", other, got)
	}
}

// FuzzCompactHTMLSafe checks that JSON compactHTMLSafe accepts is what
// encoding/json makes of it as a json.RawMessage: itself.
func FuzzCompactHTMLSafe(f *testing.F) {
	for _, s := range []string{`{"a":"b c"}`, `{"a":"q\" \\ x"}`, `{ "a": 1 }`, `{"a":"<"}`, "{\"a\":\"\u2028\"}", `["\\\"",1]`, `{"a":"\u00e9\u2029"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !compactHTMLSafe(raw) {
			return
		}
		encoded, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encoded, raw) {
			t.Errorf("compactHTMLSafe accepted %q, which encoding/json writes as %q", raw, encoded)
		}
	})
}
