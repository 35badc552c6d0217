package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// BenchmarkMCP measures, in one run, a call of an MCP server's tool
// through the registry against the same call through the official
// TypeScript client: the echo tool of server-everything over stdio, the
// same node, entry file and arguments on both sides, each server started
// by its client and warm. The TypeScript side is
// tests/mcp-servers/bench-client.mjs (the SDK's Client and
// StdioClientTransport), which times each of its calls itself.
//
// Each side makes b.N calls, each timed on its own; the two take turns in
// blocks of calls, every other round in the reverse order, so that the
// noise of a shared machine falls on both alike. The figures are medians
// of the per-call times: agenthost-ns/call, ts-client-ns/call, and
// x-vs-ts-client, agenthost's over the TypeScript client's (at most 1 is
// the target). It reports; it does not fail on speed.
//
// Run it with: go test -run '^$' -bench BenchmarkMCP -benchtime 3000x ./host/
func BenchmarkMCP(b *testing.B) {
	ctx := context.Background()
	srv := everything(b)
	reg, err := host.NewDefaultToolRegistry(b.Context(), b.TempDir(), &host.Options{
		Logger:     hclog.NewNullLogger(),
		MCPServers: []host.MCPServer{srv},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	args := json.RawMessage(`{"message":"x"}`)
	agenthost := func() bool { return reg.Execute(ctx, "echo", args) == "Echo: x" }
	warmUp(b, "agenthost", agenthost) // and the server's start
	ts := startTSClient(b, srv.Command, srv.Args)

	const block = 64
	var ours, theirs []time.Duration
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round, done = round+1, done+block {
		n := min(block, b.N-done)
		turns := []func(){
			func() {
				for range n {
					start := time.Now()
					ok := agenthost()
					ours = append(ours, time.Since(start))
					if !ok {
						b.Fatal("agenthost: the call failed")
					}
				}
			},
			func() { theirs = append(theirs, ts(n)...) },
		}
		if round%2 == 1 {
			slices.Reverse(turns)
		}
		for _, turn := range turns {
			turn()
		}
	}
	b.StopTimer()
	median := func(d []time.Duration) float64 {
		return float64(slices.Sorted(slices.Values(d))[len(d)/2])
	}
	m, mts := median(ours), median(theirs)
	b.ReportMetric(m, "agenthost-ns/call")
	b.ReportMetric(mts, "ts-client-ns/call")
	b.ReportMetric(m/mts, "x-vs-ts-client")
	// ns/op would be the sum of both sides and the turns: meaningless here.
	b.ReportMetric(0, "ns/op")
}

// startTSClient starts bench-client.mjs, which starts the server command
// args and warms up, and returns a function that has it make n calls and
// returns their durations. The client, and with it the server, is stopped
// when the benchmark ends.
func startTSClient(b *testing.B, command string, args []string) func(n int) []time.Duration {
	b.Helper()
	dir := mcptest.Dir(b)
	cmd := exec.Command(mcptest.Node(b), append([]string{filepath.Join(dir, "bench-client.mjs"), "--"}, append([]string{command}, args...)...)...)
	cmd.Dir = dir
	var stderr plugintest.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close() // the client closes, and stops its server, at the end of its stdin
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 64<<20)
	next := func() []byte {
		if !lines.Scan() {
			b.Fatalf("bench-client.mjs ended: %v\n%s", lines.Err(), stderr.String())
		}
		return lines.Bytes()
	}
	if line := next(); string(line) != "ready" {
		b.Fatalf("bench-client.mjs: %q\n%s", line, stderr.String())
	}
	return func(n int) []time.Duration {
		if _, err := io.WriteString(stdin, strconv.Itoa(n)+"\n"); err != nil {
			b.Fatalf("bench-client.mjs: %v\n%s", err, stderr.String())
		}
		var answer struct {
			NS []int64 `json:"ns"`
		}
		if err := json.Unmarshal(next(), &answer); err != nil || len(answer.NS) != n {
			b.Fatalf("bench-client.mjs: %d durations, %v, for %d calls", len(answer.NS), err, n)
		}
		d := make([]time.Duration, n)
		for i, ns := range answer.NS {
			d[i] = time.Duration(ns)
		}
		return d
	}
}
