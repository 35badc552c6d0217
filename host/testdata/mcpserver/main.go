// Command mcpserver is an MCP server over stdio whose tools misbehave on
// request, for the host's tests of MCP servers as tool sources: it
// crashes (with last words on stderr, or none), sleeps past deadlines,
// spawns children (one in a session of its own, to outlive it), reads
// files the sandbox may forbid, sends datagrams, dials unix sockets and
// changes its list of tools; one of its tools has structured results,
// and another breaks its output schema. Others answer with an image of
// any size, ask the client's model (sampling), log and report progress
// during a call, and add a prompt and a resource.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type textIn struct {
	Text string `json:"text"`
}

type sleepIn struct {
	Millis   int    `json:"millis"`
	Started  string `json:"started,omitempty"`
	Canceled string `json:"canceled,omitempty"`
}

type pathIn struct {
	Path string `json:"path"`
}

type none struct{}

type bytesIn struct {
	Bytes int `json:"bytes"`
}

type countOut struct {
	Words int `json:"words"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	// MCPSERVER_STDERR is written to stderr at start.
	fmt.Fprint(os.Stderr, os.Getenv("MCPSERVER_STDERR"))
	// MCPSERVER_TOOLS=N,SIZE lists N more tools, each with a description
	// of SIZE bytes, a page of 10 at a time.
	pageSize := 0
	var extra, size int
	if v := os.Getenv("MCPSERVER_TOOLS"); v != "" {
		n, sz, _ := strings.Cut(v, ",")
		extra, _ = strconv.Atoi(n)
		size, _ = strconv.Atoi(sz)
		pageSize = 10
	}
	// It declares prompts and resources, which it has none of until the
	// tool offer adds them.
	server := mcp.NewServer(&mcp.Implementation{Name: "hostile-mcp", Version: "0.1.0"}, &mcp.ServerOptions{PageSize: pageSize, HasPrompts: true, HasResources: true})
	for i := range extra {
		mcp.AddTool(server, &mcp.Tool{Name: fmt.Sprintf("extra%d", i), Description: strings.Repeat("d", size)},
			func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
				return text("extra"), nil, nil
			})
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "pid", Description: "The server's process id."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			return text(pidAnswer(os.Getpid())), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "fail", Description: "An error result with the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			r := text(in.Text)
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "die", Description: "Write the text to stderr, and exit mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			fmt.Fprint(os.Stderr, in.Text)
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "crash", Description: "Exit mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "sleep", Description: "Sleep, until the call is canceled (then create the file canceled)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			if in.Started != "" {
				if err := os.WriteFile(in.Started, nil, 0o644); err != nil {
					return nil, nil, err
				}
			}
			select {
			case <-time.After(time.Duration(in.Millis) * time.Millisecond):
				return text("slept"), nil, nil
			case <-ctx.Done():
				if in.Canceled != "" {
					_ = os.WriteFile(in.Canceled, nil, 0o644)
				}
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(server, &mcp.Tool{Name: "image", Description: "A text and an image."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture:"},
				&mcp.ImageContent{Data: make([]byte, 68), MIMEType: "image/png"},
			}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "read", Description: "Read a file."},
		func(ctx context.Context, req *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			data, err := os.ReadFile(in.Path)
			if err != nil {
				r := text(err.Error())
				r.IsError = true
				return r, nil, nil
			}
			return text(string(data)), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "spawn", Description: "Start a child that sleeps, and return its pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(pidAnswer(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "escape", Description: "Start a child that sleeps in a session of its own, and return its pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "1000")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(pidAnswer(cmd.Process.Pid)), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "udp", Description: "Send a datagram to the UDP port text of 127.0.0.1."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			c, err := net.Dial("udp", "127.0.0.1:"+in.Text)
			if err == nil {
				_, err = c.Write([]byte("exfiltrated"))
				c.Close()
			}
			if err != nil {
				return text(err.Error()), nil, nil
			}
			return text("sent"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "dial", Description: "Connect to the unix socket at path."},
		func(ctx context.Context, req *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			c, err := net.Dial("unix", in.Path)
			if err != nil {
				return text(err.Error()), nil, nil
			}
			c.Close()
			return text("connected"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "grow", Description: "Add the tool grown, and say so to the client."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(server, &mcp.Tool{Name: "grown", Description: "A tool that was added."},
				func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
					return text("grown"), nil, nil
				})
			return text("grew"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "flood", Description: "Write a line of 66 MiB to stdout past the SDK; with text \"endless\", one that never ends."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			// One write: os.File holds its write lock for all of it, so
			// nothing the SDK writes lands inside the line.
			line := []byte(`{"jsonrpc":"2.0","id":999999,"result":{"content":[{"type":"text","text":"` + strings.Repeat("a", 66<<20))
			if in.Text == "endless" {
				if _, err := os.Stdout.Write(line); err != nil {
					os.Exit(5)
				}
				<-ctx.Done()
				select {}
			}
			if _, err := os.Stdout.Write(append(line, `"}]}}`+"\n"...)); err != nil {
				os.Exit(5)
			}
			return text("flooded"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "shrink", Description: "Remove the tool grown, and say so to the client."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			server.RemoveTools("grown")
			return text("shrank"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "count", Title: "Count words", Description: "Count the words of the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, countOut, error) {
			n := len(strings.Fields(in.Text))
			return text(fmt.Sprintf("%d words", n)), countOut{Words: n}, nil
		})
	// The SDK's AddTool of a raw handler checks nothing against the
	// output schema.
	server.AddTool(&mcp.Tool{
		Name:         "lie",
		Description:  "Declare an output schema, and answer what breaks it.",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := text("two words")
		r.StructuredContent = map[string]any{"words": "two"}
		return r, nil
	})
	// What a server asks and says during a call, which agenthost mcp
	// passes on to the client in front of it.
	mcp.AddTool(server, &mcp.Tool{Name: "big-image", Description: "An image of the given number of bytes."},
		func(ctx context.Context, req *mcp.CallToolRequest, in bytesIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, in.Bytes), MIMEType: "image/png"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ask", Description: "Ask the client's model the text (sampling), and answer what it said, or why it could not."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}}})
			if err != nil {
				return text("refused: " + err.Error()), nil, nil
			}
			answer, _ := res.Content.(*mcp.TextContent)
			if answer == nil {
				return text("an answer without text"), nil, nil
			}
			return text("the model said: " + answer.Text), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "chatter", Description: "Log a debug, an info and a warning message, and report progress 1, 2, 3 of 3."},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			for _, level := range []mcp.LoggingLevel{"debug", "info", "warning"} {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "chatter", Data: "a " + string(level) + " message"})
			}
			if token := req.Params.GetProgressToken(); token != nil {
				for i := 1; i <= 3; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3})
				}
			}
			return text("chattered"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "offer", Description: "Add a prompt and a resource (test://TEXT) named text, and say so to the client."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			server.AddPrompt(&mcp.Prompt{Name: in.Text}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "the prompt " + in.Text}}}}, nil
			})
			uri := "test://" + in.Text
			server.AddResource(&mcp.Resource{URI: uri, Name: in.Text}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "the resource " + in.Text}}}, nil
			})
			return text("offered"), nil, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

// pidAnswer is how the plugin answers with a process id: the number and
// the PID namespace it is a number in ("12 pid:[4026531836]"), which a
// sandboxed plugin has of its own; the tests find the process by both
// (plugintest.HostPID).
func pidAnswer(pid int) string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return strconv.Itoa(pid) + " " + ns
}
