package mcpserve

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callResult is a tools/call result of one text content on its way to
// the client, in a form that encoding/json writes with one pass over its
// text.
//
// The SDK's JSON-RPC layer marshals each result with encoding/json, and
// *mcp.CallToolResult is a json.Marshaler: its MarshalJSON marshals the
// text content (one pass over the text), then the result around it (a
// second: encoding/json compacts, byte by byte, whatever a MarshalJSON
// returns), and the layer's own marshal compacts the whole once more.
// For read_file's answer of 100 KiB those two extra passes cost about
// 0.4 ms of a 1.4 ms call. callResult is a plain struct instead, which
// encoding/json writes field by field, quoting the text as it goes and
// scanning nothing again; only the structured result, JSON already and
// much smaller than the text as a rule, is compacted as it is copied.
// The bytes are the SDK's, except that <, > and & (and, in the
// structured result, U+2028 and U+2029) are written as they are rather
// than escaped: the same JSON strings (TestCallResultJSON).
//
// callResult embeds the result, so that the SDK sees the same result
// through its methods: it sets the _meta of a result after the
// middleware has returned (its server information, for clients of
// protocol 2026-07-28 and later), which the Meta field reads when the
// result is written. The embedded result's fields are left out by its
// json tag, and its MarshalJSON is hidden by the field of that name, so
// callResult is no json.Marshaler.
type callResult struct {
	*mcp.CallToolResult `json:"-"`
	// MarshalJSON hides the embedded result's method of that name.
	MarshalJSON struct{} `json:"-"`

	// The members in the order the SDK writes them.
	Meta              resultMeta      `json:"_meta,omitzero"`
	Content           [1]textContent  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	RequestState      string          `json:"requestState,omitempty"`
	ResultType        string          `json:"resultType,omitempty"`
}

// textContent is a text content as the SDK writes one without _meta or
// annotations.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// resultMeta is the _meta of the result it points to, as it is when the
// result is written.
type resultMeta struct{ res *mcp.CallToolResult }

func (m resultMeta) IsZero() bool                 { return len(m.res.Meta) == 0 }
func (m resultMeta) MarshalJSON() ([]byte, error) { return json.Marshal(m.res.Meta) }

// fastResult wraps res, a tools/call result, as a callResult when it is
// one text content, with or without a structured result that is a
// json.RawMessage, as callTool makes them. It leaves every other result
// as it is, for the SDK to write.
func fastResult(res mcp.Result) mcp.Result {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || r.InputRequests != nil {
		return res
	}
	text, ok := soleText(r)
	if !ok {
		return res
	}
	var structured json.RawMessage
	switch s := r.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if len(s) == 0 {
			return res
		}
		structured = s
	default:
		return res
	}
	resultType, ok := resultTypeOf(r)
	if !ok {
		return res
	}
	return callResult{
		CallToolResult:    r,
		Meta:              resultMeta{r},
		Content:           [1]textContent{{Type: "text", Text: text}},
		StructuredContent: structured,
		IsError:           r.IsError,
		RequestState:      r.RequestState,
		ResultType:        resultType,
	}
}

// resultTypeOf returns the resultType the SDK gave res (unexported, so
// read from its JSON without its content), and false when that JSON has
// a member callResult does not write.
func resultTypeOf(res *mcp.CallToolResult) (string, bool) {
	shell := *res
	shell.Meta, shell.Content, shell.StructuredContent = nil, nil, nil
	data, err := shell.MarshalJSON()
	if err != nil {
		return "", false
	}
	var members struct {
		Content      json.RawMessage `json:"content"`
		IsError      bool            `json:"isError"`
		RequestState string          `json:"requestState"`
		ResultType   string          `json:"resultType"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&members) != nil {
		return "", false
	}
	return members.ResultType, true
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
