package main

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callResult is a tool call's result on its way to the client, encoded
// with fewer passes over its text and its structured result than the
// SDK's own encoding makes.
//
// The SDK encodes a *mcp.CallToolResult with encoding/json three levels
// deep: the text content is marshalled, then the result around it, with
// the structured result (a json.RawMessage) validated and compacted
// there, and then the whole scanned and compacted once more where the
// response is marshalled. For list_dir's answer of 200 entries (2.6 KB
// of text, 7.7 KB of structured result) that is about 0.1 ms. Here the
// text is marshalled once and the structured result, already compact,
// is copied as it is, which leaves the last scan alone: the bytes are
// those of the SDK's encoding, byte for byte (TestToolResultBytes).
//
// It embeds the result, so that the SDK sees the same result through its
// methods.
type callResult struct {
	*mcp.CallToolResult
}

// fastResult wraps res, a tools/call result, as a callResult, and leaves
// every other result as it is.
func fastResult(res mcp.Result) mcp.Result {
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
		return callResult{r}
	}
	return res
}

// contentHead is how the SDK's encoding of a result without content and
// without _meta begins.
const contentHead = `{"content":null`

// MarshalJSON encodes the result as (*mcp.CallToolResult).MarshalJSON
// does. A result of one text content and a structured result that is a
// json.RawMessage (or none), as callTool makes them, is encoded here;
// any other by the SDK.
func (r callResult) MarshalJSON() ([]byte, error) {
	res := r.CallToolResult
	text, ok := soleText(res)
	if !ok || res.Meta != nil {
		return res.MarshalJSON()
	}
	var structured json.RawMessage
	switch s := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if len(s) == 0 || !compactHTMLSafe(s) {
			return res.MarshalJSON()
		}
		structured = s
	default:
		return res.MarshalJSON()
	}
	// The members after the content (isError, resultType, ...) as the
	// SDK writes them, from a copy of the result without its content.
	shell := *res
	shell.Content, shell.StructuredContent = nil, nil
	head, err := shell.MarshalJSON()
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(head, []byte(contentHead))
	if !ok {
		return res.MarshalJSON()
	}
	// As the SDK's json.Marshal writes a string: <, > and & escaped.
	quoted, err := json.Marshal(text)
	if err != nil {
		return nil, err
	}
	const open, closeText, structuredKey = `{"content":[{"type":"text","text":`, `}]`, `,"structuredContent":`
	out := make([]byte, 0, len(open)+len(quoted)+len(closeText)+len(structuredKey)+len(structured)+len(rest))
	out = append(append(append(out, open...), quoted...), closeText...)
	if structured != nil {
		out = append(append(out, structuredKey...), structured...)
	}
	return append(out, rest...), nil
}

// soleText returns the text of res's content when that is one text
// content without _meta or annotations.
func soleText(res *mcp.CallToolResult) (string, bool) {
	if len(res.Content) != 1 {
		return "", false
	}
	c, ok := res.Content[0].(*mcp.TextContent)
	if !ok || c == nil || c.Meta != nil || c.Annotations != nil {
		return "", false
	}
	return c.Text, true
}

// compactHTMLSafe reports whether raw, valid JSON, is as encoding/json
// writes a json.RawMessage within a value it marshals: compact (no
// space outside strings), and without <, >, & or the line separators
// U+2028 and U+2029, which it escapes. Such JSON is copied as it is.
func compactHTMLSafe(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '<', '>', '&':
			return false
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				return false
			}
		case '"':
			inString = !inString
		case '\\':
			if inString {
				i++ // the escaped byte: \" does not end the string
			}
		case ' ', '\t', '\n', '\r':
			if !inString {
				return false
			}
		}
	}
	return true
}
