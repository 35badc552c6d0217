package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// mcpServers are the options of a registry of server-everything and
// host/testdata/mcpserver.
func mcpServers(t *testing.T) *host.Options {
	cmd, args := mcptest.Everything(t)
	return &host.Options{Logger: hclog.NewNullLogger(), CacheDir: host.NoCache, MCPServers: []host.MCPServer{
		{Name: "everything", Command: cmd, Args: args},
		{Name: "hostile", Command: plugintest.Binary(t, "./host/testdata/mcpserver")},
	}}
}

// TestAgentToolImages: the image of an MCP server's tool result goes to
// the model with the result's text, unless NoToolImages; one that is not
// an image the APIs take stays text.
func TestAgentToolImages(t *testing.T) {
	t.Parallel()
	for _, noImages := range []bool{false, true} {
		p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
			callTools("", "get-tiny-image", `{}`, "image", `{}`),
			answer("seen"),
		}}
		a := newAgent(t, p, agent.Options{RegistryOptions: mcpServers(t), NoToolImages: noImages})
		if _, err := a.Chat(t.Context(), "look"); err != nil {
			t.Fatal(err)
		}
		msgs := p.requests()[1].Messages
		tiny, zeros := msgs[len(msgs)-2], msgs[len(msgs)-1]
		if !strings.Contains(tiny.Content, "[image: ") || !strings.Contains(zeros.Content, "[image: 68 bytes, image/png]") {
			t.Errorf("the results' text: %q, %q", tiny.Content, zeros.Content)
		}
		if len(zeros.Images) != 0 {
			t.Errorf("68 zero bytes called image/png were sent as an image")
		}
		switch {
		case noImages && len(tiny.Images) != 0:
			t.Errorf("NoToolImages: %d images sent", len(tiny.Images))
		case !noImages && (len(tiny.Images) != 1 || tiny.Images[0].MediaType != "image/png" || tiny.Images[0].Check() != nil):
			t.Errorf("the tiny image: %d images sent", len(tiny.Images))
		}
	}
}

// TestAgentSamplingWithItsModel: with Sampling, an MCP server's sampling
// request during a call is answered by the agent's model, without tools;
// without it, the server is told it is not supported.
func TestAgentSamplingWithItsModel(t *testing.T) {
	t.Parallel()
	for _, sampling := range []bool{true, false} {
		p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
			callTools("", "ask", `{"text":"What is 2+2?"}`),
			answer("4"),
			answer("done"),
		}}
		a := newAgent(t, p, agent.Options{RegistryOptions: mcpServers(t), Sampling: sampling, Model: "m"})
		if _, err := a.Chat(t.Context(), "ask it"); err != nil {
			t.Fatal(err)
		}
		reqs := p.requests()
		last := reqs[len(reqs)-1].Messages
		result := last[len(last)-1].Content
		if !sampling {
			if len(reqs) != 2 || !strings.Contains(result, "sampling is not supported here: the client in front of the call does not offer it") {
				t.Errorf("without Sampling: %d requests, result %q", len(reqs), result)
			}
			continue
		}
		if len(reqs) != 3 || result != "the model said: 4" {
			t.Fatalf("with Sampling: %d requests, result %q", len(reqs), result)
		}
		if asked := reqs[1]; len(asked.Tools) != 0 || len(asked.Messages) != 1 || asked.Messages[0].Content != "What is 2+2?" || asked.MaxTokens != 100 || asked.Model != "m" {
			t.Errorf("the sampling request: %+v", asked)
		}
	}
}
