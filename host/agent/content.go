package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
)

// ContentRegistry is a [Registry] whose calls return the parts of a
// tool's result besides its text (host.ToolRegistry.ExecuteContent): the
// agent sends the model the images among them (see
// Options.NoToolImages).
type ContentRegistry interface {
	ExecuteContent(ctx context.Context, name string, args json.RawMessage) host.Result
}

// maxToolImages bounds the images of one tool result sent to the model;
// the rest are known to it by the result's text alone.
const maxToolImages = 8

// toolImages are the images among a result's parts that the model can be
// sent: of a type the APIs take, each of at most llm.MaxImageSize bytes,
// at most maxToolImages. The others are known to the model by the
// result's text, which says what each part was.
func toolImages(parts []host.Content) []llm.Image {
	var images []llm.Image
	for _, c := range parts {
		if c.Type != host.ContentImage || len(images) == maxToolImages {
			continue
		}
		im := llm.Image{MediaType: c.MIMEType, Data: c.Data}
		if im.Check() != nil {
			// A server may call a JPEG image/png: what the data is counts.
			im.MediaType = ""
			if im.Check() != nil {
				continue
			}
		}
		images = append(images, im)
	}
	return images
}

// execute runs a tool call: its result's text, and the images to send
// with it.
func (a *Agent) execute(ctx context.Context, name string, args json.RawMessage) (string, []llm.Image) {
	if cr, ok := a.registry.(ContentRegistry); ok && !a.noToolImages {
		res := cr.ExecuteContent(ctx, name, args)
		return res.Text, toolImages(res.Content)
	}
	return a.registry.Execute(ctx, name, args), nil
}

// peer is what the agent offers the MCP servers whose tools it calls:
// with Options.Sampling, its model answers their sampling requests.
func (a *Agent) peer() *host.MCPPeer {
	p := &host.MCPPeer{Key: a}
	if a.sampling {
		p.CreateMessage = a.sample
	}
	return p
}

// sample answers an MCP server's sampling/createMessage with the agent's
// provider and model: the server's system prompt and messages (text and,
// from the user, images), at most its maxTokens (and the agent's
// MaxTokens). Tools in sampling are not offered: a request with tool use
// or results is refused. The tokens count in the agent's usage.
func (a *Agent) sample(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if len(p.Tools) > 0 {
		return nil, errors.New("sampling with tools is not supported")
	}
	req := &llm.Request{Model: a.model, System: p.SystemPrompt, MaxTokens: int(p.MaxTokens), Stop: p.StopSequences}
	if a.maxTokens > 0 && (req.MaxTokens <= 0 || req.MaxTokens > a.maxTokens) {
		req.MaxTokens = a.maxTokens
	}
	if p.Temperature > 0 {
		t := p.Temperature
		req.Temperature = &t
	}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		msg := llm.Message{Role: llm.RoleUser}
		if m.Role == "assistant" {
			msg.Role = llm.RoleAssistant
		}
		var text []string
		for _, c := range m.Content {
			switch c := c.(type) {
			case *mcp.TextContent:
				text = append(text, c.Text)
			case *mcp.ImageContent:
				im := llm.Image{Data: c.Data}
				if msg.Role != llm.RoleUser || im.Check() != nil {
					return nil, errors.New("the sampling request has an image the model cannot be sent")
				}
				msg.Images = append(msg.Images, im)
			default:
				return nil, fmt.Errorf("the sampling request has content of a kind not supported here (%T)", c)
			}
		}
		msg.Content = strings.Join(text, "\n")
		req.Messages = append(req.Messages, msg)
	}
	resp, err := a.provider.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.usage = a.usage.Add(resp.Usage)
	a.mu.Unlock()
	stop := resp.StopReason
	switch stop {
	case "end_turn":
		stop = "endTurn"
	case "max_tokens":
		stop = "maxTokens"
	case "stop_sequence":
		stop = "stopSequence"
	}
	return &mcp.CreateMessageWithToolsResult{
		Role:       "assistant",
		Model:      a.model,
		StopReason: stop,
		Content:    []mcp.Content{&mcp.TextContent{Text: resp.Message.Content}},
	}, nil
}
