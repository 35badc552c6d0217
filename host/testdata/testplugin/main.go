// Command testplugin serves tools that misbehave on request, for the
// host's real-process tests.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk"
)

type textInput struct {
	Text string `json:"text" jsonschema:"the text"`
}

type sleepInput struct {
	Millis       int    `json:"millis" jsonschema:"how long to sleep"`
	IgnoreCancel bool   `json:"ignore_cancel,omitempty" jsonschema:"keep sleeping after the deadline"`
	Started      string `json:"started,omitempty" jsonschema:"a file to create once the sleep has begun"`
}

type empty struct{}

func main() {
	sdk.Serve(
		sdk.NewTool(sdk.Info{Name: "echo", Description: "Echo the text."},
			func(ctx context.Context, in textInput) (string, error) { return in.Text, nil }),
		sdk.NewTool(sdk.Info{Name: "fail", Description: "Fail with the text."},
			func(ctx context.Context, in textInput) (string, error) { return "", fmt.Errorf("%s", in.Text) }),
		sdk.NewTool(sdk.Info{Name: "boom", Description: "Panic."},
			func(ctx context.Context, in empty) (string, error) { panic("kaboom") }),
		sdk.NewTool(sdk.Info{Name: "crash", Description: "Exit the plugin process mid-call."},
			func(ctx context.Context, in empty) (string, error) { os.Exit(3); return "", nil }),
		sdk.NewTool(sdk.Info{Name: "sleep", Description: "Sleep."},
			func(ctx context.Context, in sleepInput) (string, error) {
				if in.Started != "" {
					if err := os.WriteFile(in.Started, nil, 0o644); err != nil {
						return "", err
					}
				}
				if in.IgnoreCancel {
					time.Sleep(time.Duration(in.Millis) * time.Millisecond)
					return "slept", nil
				}
				select {
				case <-time.After(time.Duration(in.Millis) * time.Millisecond):
					return "slept", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}),
		sdk.NewTool(sdk.Info{Name: "pid", Description: "Return the plugin's process id."},
			func(ctx context.Context, in empty) (string, error) { return pidAnswer(os.Getpid()), nil }),
		sdk.NewTool(sdk.Info{Name: "spawn", Description: "Start a long-lived child process and return its id."},
			func(ctx context.Context, in empty) (string, error) {
				cmd := exec.Command("sleep", "300")
				if err := cmd.Start(); err != nil {
					return "", err
				}
				go cmd.Wait()
				return pidAnswer(cmd.Process.Pid), nil
			}),
		sdk.NewTool(sdk.Info{Name: "hold", Description: "Start a grandchild in a session of its own that holds the plugin's stderr open, and return its id."},
			func(ctx context.Context, in empty) (string, error) {
				// What a plugin must never do: the host has to cope.
				cmd := exec.Command("sh", "-c", "exec sleep 300")
				cmd.Stderr = os.Stderr
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := cmd.Start(); err != nil {
					return "", err
				}
				go cmd.Wait()
				return pidAnswer(cmd.Process.Pid), nil
			}),
		sdk.NewTool(sdk.Info{Name: "state", Description: "Return the host state as JSON."},
			func(ctx context.Context, in empty) (string, error) {
				st, err := sdk.HostState(ctx)
				if err != nil {
					return "", err
				}
				b, err := json.Marshal(st)
				return string(b), err
			}),
		sdk.NewTool(sdk.Info{Name: "stdout", Description: "Write the text to the plugin's stdout and stderr."},
			func(ctx context.Context, in textInput) (string, error) {
				fmt.Fprintln(os.Stdout, in.Text)
				fmt.Fprintln(os.Stderr, in.Text)
				return "written", nil
			}),
		sdk.NewTool(sdk.Info{Name: "chatter", Description: "Write lines to stderr, without end, from now on."},
			func(ctx context.Context, in textInput) (string, error) {
				go func() {
					for i := 0; ; i++ {
						fmt.Fprintf(os.Stderr, "%s %d\n", in.Text, i)
					}
				}()
				return "chattering", nil
			}),
		sdk.NewTool(sdk.Info{Name: "big", Description: "Return a string of n bytes."},
			func(ctx context.Context, in struct {
				N int `json:"n" jsonschema:"bytes"`
			}) (string, error) {
				return strings.Repeat("x", in.N), nil
			}),
		sdk.NewTool(sdk.Info{Name: "patient", Description: "Sleep, with a deadline of its own.", Annotations: sdk.Annotations{Timeout: 400 * time.Millisecond}},
			func(ctx context.Context, in sleepInput) (string, error) {
				select {
				case <-time.After(time.Duration(in.Millis) * time.Millisecond):
					return "slept", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}),
		sdk.NewTool(sdk.Info{Name: "danger", Description: "An opt-in tool.", Annotations: sdk.Annotations{Destructive: true, OptIn: true}},
			func(ctx context.Context, in empty) (string, error) { return "done", nil }),
		loose{},
	)
}

// loose is a tool written without sdk.NewTool: it declares a schema but
// never checks its arguments, so the host must.
type loose struct{}

func (loose) Name() string { return "loose" }

func (loose) Schema() sdk.ChatTool {
	return sdk.NewChatTool("loose", "Answer with the arguments, unchecked.",
		json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`))
}

func (loose) Execute(_ context.Context, args json.RawMessage) (string, error) {
	return "ran with " + string(args), nil
}

// pidAnswer is how the plugin answers with a process id: the number and
// the PID namespace it is a number in ("12 pid:[4026531836]"), which a
// sandboxed plugin has of its own; the tests find the process by both
// (plugintest.HostPID).
func pidAnswer(pid int) string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return strconv.Itoa(pid) + " " + ns
}
