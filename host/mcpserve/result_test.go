package mcpserve

import (
	"bytes"
	"encoding/json"
	"reflect"
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

// TestCallResultJSON checks that a result wrapped by fastResult is sent
// as the SDK sends it: the same JSON, and the same bytes but for <, >, &,
// U+2028 and U+2029, which the SDK escapes; on the fast path and on
// every way off it.
func TestCallResultJSON(t *testing.T) {
	if _, ok := any(callResult{}).(json.Marshaler); ok {
		t.Fatal("callResult is a json.Marshaler: encoding/json would scan what it returns once more")
	}
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
		fast bool // written from a callResult rather than by the SDK
		// meta is set through the wrapped result after fastResult, as the
		// SDK sets its server information.
		meta mcp.Meta
	}{
		{name: "text only", res: &mcp.CallToolResult{Content: text("dir/\nfile (3 B)\n")}, fast: true},
		{name: "text to escape", res: &mcp.CallToolResult{Content: text("a -> b & <c> \"q\" \\ \t\u2028\u2029 \x00 \xff end")}, fast: true},
		{name: "text with an escape's letters", res: &mcp.CallToolResult{Content: text(`\u003c \\u003c`)}, fast: true},
		{name: "empty text", res: &mcp.CallToolResult{Content: text("")}, fast: true},
		{name: "error", res: &mcp.CallToolResult{Content: text("Error executing x: no"), IsError: true}, fast: true},
		{name: "structured", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"path":"d","entries":[{"name":"a b","type":"file","size":3}],"more":0}`)}, fast: true},
		{name: "structured with escapes", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"a":"q\" \\ \u003c \u2028 x","b":[1,2.5e3,true,null,{}]}`)}, fast: true},
		{name: "structured, resultType", res: complete(raw(`{"n":1}`)), fast: true},
		{name: "resultType", res: complete(nil), fast: true},
		{name: "structured with spaces", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{ "a": [1, 2] }`)}, fast: true},
		{name: "structured with a line break", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: raw("{\"a\":\n1}")}, fast: true},
		{name: "structured with <", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: raw(`{"a":"<b>"}`)}, fast: true},
		{name: "structured with U+2028", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: raw("{\"a\":\"b\u2028c\"}")}, fast: true},
		{name: "meta", res: &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: text("a")}, fast: true},
		{name: "meta set later", res: complete(raw(`{"n":1}`)), fast: true, meta: mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "agenthost"}}},
		{name: "request state", res: &mcp.CallToolResult{Content: text("a"), RequestState: "s"}, fast: true},
		{name: "structured as a map", res: &mcp.CallToolResult{Content: text("x"), StructuredContent: map[string]any{"a": "<b>"}}},
		{name: "two contents", res: &mcp.CallToolResult{Content: append(text("a"), &mcp.TextContent{Text: "b"})}},
		{name: "no content", res: &mcp.CallToolResult{Content: []mcp.Content{}}},
		{name: "annotated text", res: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}}},
		{name: "text with meta", res: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": 1}}}}},
		{name: "input requests", res: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wrapped := fastResult(c.res)
			if c.meta != nil {
				wrapped.SetMeta(c.meta)
			}
			_, fast := wrapped.(callResult)
			if fast != c.fast {
				t.Fatalf("fastResult returned %T, want a callResult: %v", wrapped, c.fast)
			}
			if !fast && wrapped != mcp.Result(c.res) {
				t.Fatalf("fastResult returned %T, not the result it was given", wrapped)
			}
			want := marshalAsSDK(t, c.res)
			got := marshalAsSDK(t, wrapped)
			var gotValue, wantValue any
			if err := json.Unmarshal(got, &gotValue); err != nil {
				t.Fatalf("sent as invalid JSON %s: %v", got, err)
			}
			if err := json.Unmarshal(want, &wantValue); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotValue, wantValue) {
				t.Errorf("sent as\n%s\nthe SDK sends\n%s", got, want)
			}
			if !bytes.ContainsAny(got, "<>&\u2028\u2029") && !bytes.Equal(got, want) {
				t.Errorf("sent as the bytes\n%s\nthe SDK sends\n%s", got, want)
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
