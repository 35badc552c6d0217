package mcpsource

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// resultText is the text of a tool's result for a model:
//   - each content block in order, "\n" between blocks: a text block's
//     text, an embedded resource's text, and for every other block one
//     line saying what it is, so that the model knows it is there:
//     "[image: 1234 bytes, image/png]", "[audio: 5678 bytes, audio/wav]",
//     "[resource link: file:///x.txt (name), text/plain]",
//     "[resource: file:///x.bin, 100 bytes, application/octet-stream]"
//     (sizes are of the decoded data);
//   - with no content blocks, the JSON of the structured content, if any.
//
// A text longer than max bytes is an error.
func resultText(res *mcp.CallToolResult, max int) (string, error) {
	if len(res.Content) == 0 {
		if res.StructuredContent == nil {
			return "", nil
		}
		text, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", fmt.Errorf("the server's structured content could not be encoded: %v", err)
		}
		if len(text) > max {
			return "", tooLarge(len(text), max)
		}
		return string(text), nil
	}
	parts := make([]string, len(res.Content))
	size := len(parts) - 1
	for i, c := range res.Content {
		parts[i] = blockText(c)
		size += len(parts[i])
	}
	if size > max {
		return "", tooLarge(size, max)
	}
	return strings.Join(parts, "\n"), nil
}

func tooLarge(size, max int) error {
	return fmt.Errorf("the result is %d bytes of text, more than the limit of %d bytes", size, max)
}

// blockText is one content block's part of a result's text.
func blockText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return media("image", len(c.Data), c.MIMEType)
	case *mcp.AudioContent:
		return media("audio", len(c.Data), c.MIMEType)
	case *mcp.ResourceLink:
		line := "[resource link: " + textsafe.Name(c.URI)
		if c.Name != "" {
			line += " (" + textsafe.Name(c.Name) + ")"
		}
		if c.MIMEType != "" {
			line += ", " + textsafe.Name(c.MIMEType)
		}
		return line + "]"
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Blob == nil {
			return r.Text
		}
		line := fmt.Sprintf("[resource: %s, %d bytes", textsafe.Name(r.URI), len(r.Blob))
		if r.MIMEType != "" {
			line += ", " + textsafe.Name(r.MIMEType)
		}
		return line + "]"
	case *mcp.ToolUseContent:
		return "[tool use: " + textsafe.Name(c.Name) + "]"
	case *mcp.ToolResultContent:
		return "[tool result]"
	}
	return "[content of an unknown kind]"
}

// media is the line for an image or audio block.
func media(kind string, size int, mimeType string) string {
	line := fmt.Sprintf("[%s: %d bytes", kind, size)
	if mimeType != "" {
		line += ", " + textsafe.Name(mimeType)
	}
	return line + "]"
}

// resultParts is a result's content as the server sent it, for those who
// take more than text: nil when the text says all of it (no content, or
// one text block without annotations or _meta), else every block but the
// tool-use and tool-result blocks that belong to sampling, not to a
// tool's result. It is an error when the blocks' text and data, with
// text, the result's text, come to more than max bytes.
func resultParts(res *mcp.CallToolResult, text string, max int) ([]mcp.Content, error) {
	if len(res.Content) == 0 {
		return nil, nil
	}
	if len(res.Content) == 1 {
		if c, ok := res.Content[0].(*mcp.TextContent); ok && c.Annotations == nil && len(c.Meta) == 0 {
			return nil, nil
		}
	}
	parts := make([]mcp.Content, 0, len(res.Content))
	size := len(text)
	for _, c := range res.Content {
		switch c.(type) {
		case *mcp.ToolUseContent, *mcp.ToolResultContent:
			continue
		}
		size += contentSize(c)
		parts = append(parts, c)
	}
	if size > max {
		return nil, fmt.Errorf("the result's content is %d bytes, more than the limit of %d bytes", size, max)
	}
	return parts, nil
}
