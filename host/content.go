package host

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/mcpsource"
)

// The types of a result's content parts (Content.Type), as MCP names
// them.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// MaxContentSize bounds the content parts of one result (Result.Content):
// the bytes of their text and data, 16 MiB. A result whose parts come to
// more is carried as its text alone, which says what each part was.
const MaxContentSize = 16 << 20

// Content is one part of a tool's result as its source gave it: a text,
// an image, an audio clip, a link to a resource or a resource embedded.
// Only an MCP server's tools have results of parts (a plugin answers with
// a text and a structured result); the registry carries them beside the
// text that stands for them all (Result.Text), for those who take more
// than text: an MCP client of agenthost mcp, a model that reads images.
type Content struct {
	// Type is ContentText, ContentImage, ContentAudio,
	// ContentResourceLink or ContentResource.
	Type string `json:"type"`
	// Text is a text part's text, or an embedded resource's text.
	Text string `json:"text,omitempty"`
	// Data is an image's or audio clip's bytes, or an embedded
	// resource's blob, decoded.
	Data []byte `json:"data,omitempty"`
	// MIMEType is the media type of an image, audio clip or resource.
	MIMEType string `json:"mime_type,omitempty"`
	// URI is a resource's.
	URI string `json:"uri,omitempty"`
	// Name, Title, Description and Size describe a linked resource.
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Annotations and Meta are the part's MCP annotations and _meta, as
	// JSON objects, or nil.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"meta,omitempty"`
}

// contentSize is the bytes of text and data of parts.
func contentSize(parts []Content) int {
	n := 0
	for _, c := range parts {
		n += len(c.Text) + len(c.Data)
	}
	return n
}

// contentFromMCP converts the content blocks of an MCP server's result.
func contentFromMCP(blocks []mcp.Content) []Content {
	if len(blocks) == 0 {
		return nil
	}
	parts := make([]Content, 0, len(blocks))
	for _, b := range blocks {
		var c Content
		switch b := b.(type) {
		case *mcp.TextContent:
			c = Content{Type: ContentText, Text: b.Text, Annotations: rawJSON(b.Annotations), Meta: rawMeta(b.Meta)}
		case *mcp.ImageContent:
			c = Content{Type: ContentImage, Data: b.Data, MIMEType: b.MIMEType, Annotations: rawJSON(b.Annotations), Meta: rawMeta(b.Meta)}
		case *mcp.AudioContent:
			c = Content{Type: ContentAudio, Data: b.Data, MIMEType: b.MIMEType, Annotations: rawJSON(b.Annotations), Meta: rawMeta(b.Meta)}
		case *mcp.ResourceLink:
			c = Content{Type: ContentResourceLink, URI: b.URI, Name: b.Name, Title: b.Title, Description: b.Description,
				MIMEType: b.MIMEType, Size: b.Size, Annotations: rawJSON(b.Annotations), Meta: rawMeta(b.Meta)}
		case *mcp.EmbeddedResource:
			c = Content{Type: ContentResource, Annotations: rawJSON(b.Annotations), Meta: rawMeta(b.Meta)}
			if r := b.Resource; r != nil {
				c.URI, c.MIMEType, c.Text, c.Data = r.URI, r.MIMEType, r.Text, r.Blob
			}
		default:
			continue
		}
		parts = append(parts, c)
	}
	return parts
}

// rawJSON is v as JSON, or nil for a nil pointer or a value that does not
// encode.
func rawJSON(v *mcp.Annotations) json.RawMessage {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return data
}

// rawMeta is an MCP _meta as JSON, or nil when it is empty.
func rawMeta(m mcp.Meta) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return data
}

// MCPPeer is who stands in front of a call of an MCP server's tool, and
// what it can do when the server asks during the call: answer its
// sampling and elicitation requests, take its progress and log
// notifications (see mcpsource.Peer for how a server's request finds its
// call). agenthost mcp gives each call its MCP client's; an Agent may
// give its model for sampling.
type MCPPeer = mcpsource.Peer

// WithMCPPeer returns a context whose calls of MCP servers' tools have
// peer in front of them (see MCPPeer). Without one, a server's sampling
// and elicitation requests during the call are answered "not
// supported", and its progress goes nowhere.
func WithMCPPeer(ctx context.Context, peer *MCPPeer) context.Context {
	return context.WithValue(ctx, mcpPeerKey{}, peer)
}

type mcpPeerKey struct{}

// peerOf is the MCPPeer of a call's context, or nil.
func peerOf(ctx context.Context) *MCPPeer {
	peer, _ := ctx.Value(mcpPeerKey{}).(*MCPPeer)
	return peer
}

// mcpContent converts the content blocks of a result of the server's
// tool, or drops them (nil), with a warning, when they come to more than
// MaxContentSize: the result's text says what each was.
func (p *toolSource) mcpContent(tool string, blocks []mcp.Content) []Content {
	parts := contentFromMCP(blocks)
	if n := contentSize(parts); n > MaxContentSize {
		p.logger.Warn("passing on a result's text alone: its content parts are over the limit", "tool", tool, "bytes", n, "limit", MaxContentSize)
		return nil
	}
	return parts
}
