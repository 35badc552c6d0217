package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
)

const (
	// lbClients is how many clients call at once, each over its own
	// keep-alive connection.
	lbClients = 50
	// lbProtocol is the protocol version of the calls: no sessions, so a
	// load balancer may send each call to any replica.
	lbProtocol = "2026-07-28"
	// lbFile is the small file each call reads, and lbFileText its text.
	lbFile     = "notes.txt"
	lbFileText = "alpha\nbeta\n"
)

// lbCallBody is a tools/call of read_file in protocol lbProtocol: the
// version in _meta, as modernSend sends it.
var lbCallBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + lbProtocol + `","io.modelcontextprotocol/clientCapabilities":{}},` +
	`"name":"read_file","arguments":{"path":"` + lbFile + `"}}}`)

// BenchmarkMCPReplicas measures MCP calls per second over HTTP through a
// real load balancer, HAProxy (Debian's haproxy package), in front of 1
// and of 3 replicas of agenthost mcp --http --stateless, each with its
// own fs plugin. Both cases go through HAProxy (round robin, no
// stickiness, keep-alive and connection reuse to the replicas), so they
// compare like with like.
//
// The load: lbClients goroutines, each with its own keep-alive
// connection, share b.N calls of read_file on a small file, which goes
// through a replica's plugin over gRPC. Each call is a raw JSON-RPC POST
// of protocol 2026-07-28, the first without sessions (version in _meta
// and the Mcp-Protocol-Version, Mcp-Method and Mcp-Name headers), so that
// each call stands alone whichever replica gets it; every answer is
// checked to be the file's text and not an error. Every replica has served a call
// (which launches its plugin) and every client has made a call before the
// timer starts.
//
// Each sub-benchmark reports calls/s, the p50 and p99 latency of a call
// in ms, and where the CPU went: CPU µs per call (cpu-us-KIND/call) of
// HAProxy, of the agenthost replicas, of their plugins and of this
// process (the client: the load generator); cpu-cores, the cores they
// kept busy on average over the run; and cpu-cores-other, the cores the
// machine's other processes kept busy meanwhile, which should be near 0
// for the figures to mean anything. replicas=3 also reports x-1-replica,
// its calls/s over the median of replicas=1's, so that the median of
// x-1-replica is the ratio of the medians.
//
// Run it with: go test -run '^$' -bench '^BenchmarkMCPReplicas$' -benchtime 3000x -count 3 ./cmd/agenthost/
func BenchmarkMCPReplicas(b *testing.B) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/haproxy"); err != nil {
			b.Skip("haproxy not found: install Debian's haproxy package")
		}
		haproxy = "/usr/sbin/haproxy"
	}
	bins := plugintest.Binaries(b, "./cmd/agenthost", "./plugins/fs")
	plugins := b.TempDir()
	plugintest.Install(b, plugins, host.PluginPrefix+"fs", "./plugins/fs")
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, lbFile), []byte(lbFileText), 0o644); err != nil {
		b.Fatal(err)
	}

	rates := map[int][]float64{} // calls/s of each timed run, by replicas
	for _, n := range []int{1, 3} {
		// The cluster starts on the sub-benchmark's first run, for all
		// its runs, and stops before the next cluster starts.
		var c *lbCluster
		b.Run(fmt.Sprintf("replicas=%d", n), func(sub *testing.B) {
			if c == nil {
				c = startLBCluster(b, sub, haproxy, bins["./cmd/agenthost"], plugins, root, n)
			}
			rate := c.run(sub)
			if sub.N < lbClients {
				return // the probe run of one call
			}
			rates[n] = append(rates[n], rate)
			if n > 1 && len(rates[1]) > 0 {
				sub.ReportMetric(rate/median(rates[1]), "x-1-replica")
			}
		})
		if c != nil {
			c.stop(b)
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// lbCluster is HAProxy in front of agenthost replicas, and the clients
// that call through it.
type lbCluster struct {
	url      string // HAProxy's /mcp
	haproxy  *lbProcess
	replicas []*lbProcess
	clients  []*http.Client
}

// lbProcess is a process of a cluster, and what it wrote to stderr.
type lbProcess struct {
	name   string
	cmd    *exec.Cmd
	stderr *listenWriter
}

// listenWriter keeps what a process writes, and sends the URL of its first
// "listening on URL" line on url.
type listenWriter struct {
	plugintest.Buffer
	mu   sync.Mutex
	line []byte
	url  chan string
}

func (w *listenWriter) Write(p []byte) (int, error) {
	w.Buffer.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		line, rest, ok := bytes.Cut(w.line, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		w.line = rest
		if u, ok := strings.CutPrefix(string(line), "listening on "); ok && w.url != nil {
			w.url <- strings.TrimSpace(u)
			w.url = nil
		}
	}
}

// startLBProcess starts a process of a cluster. Once started it is ended
// by lbCluster.stop, or by owner's cleanup if the benchmark fails first.
func startLBProcess(owner, b *testing.B, name string, cmd *exec.Cmd) *lbProcess {
	b.Helper()
	p := &lbProcess{name: name, cmd: cmd, stderr: &listenWriter{url: make(chan string, 1)}}
	cmd.Stdout = &p.stderr.Buffer
	cmd.Stderr = p.stderr
	// A plugin that kept the stderr pipe open must not hold up Wait.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	owner.Cleanup(func() { p.stop(owner) })
	return p
}

// stop ends the process with SIGTERM, on which agenthost stops its plugins
// and HAProxy exits, and kills it if it has not ended in 10s. Calling it
// again does nothing.
func (p *lbProcess) stop(b *testing.B) {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
		b.Errorf("%s did not end on SIGTERM:\n%s", p.name, p.stderr.String())
	}
}

// startLBCluster starts n replicas, HAProxy in front of them, and the
// clients, and warms them all up. b is the sub-benchmark that starts
// them, and owner the benchmark whose end they must not outlive.
func startLBCluster(owner, b *testing.B, haproxy, exe, plugins, root string, n int) *lbCluster {
	b.Helper()
	c := &lbCluster{}
	var servers strings.Builder
	for i := range n {
		// Each replica on its own: no configuration file, its own
		// description cache.
		cmd := exec.Command(exe, "mcp", "--http", "127.0.0.1:0", "--stateless",
			"--config", "-", "--plugins", plugins, "--cache-dir", owner.TempDir(), "--root", root)
		cmd.Env = agenthostEnv()
		p := startLBProcess(owner, b, fmt.Sprintf("replica %d", i), cmd)
		c.replicas = append(c.replicas, p)
		var u string
		select {
		case u = <-p.stderr.url:
		case <-time.After(30 * time.Second):
			b.Fatalf("replica %d: no listening line:\n%s", i, p.stderr.String())
		}
		addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		fmt.Fprintf(&servers, "    server r%d %s\n", i, addr)
		// The first call launches the replica's plugin.
		if err := lbCall(http.DefaultClient, u); err != nil {
			b.Fatalf("replica %d: %v\n%s", i, err, p.stderr.String())
		}
	}

	// A free port for HAProxy, which is given an address to bind.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	config := filepath.Join(owner.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(config, []byte(`global
    maxconn 4096

defaults
    mode http
    maxconn 4096
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    timeout http-keep-alive 60s
    option http-keep-alive
    http-reuse always

frontend mcp
    bind `+addr+`
    default_backend replicas

backend replicas
    balance roundrobin
`+servers.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	c.haproxy = startLBProcess(owner, b, "haproxy", exec.Command(haproxy, "-db", "-f", config))
	poll.Eventually(b, 10*time.Second, "haproxy listens on "+addr, func() error {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		err = fmt.Errorf("%v\n%s", err, c.haproxy.stderr.String())
		if !plugintest.Alive(c.haproxy.cmd.Process.Pid) {
			return poll.Stop(fmt.Errorf("haproxy exited: %w", err))
		}
		return err
	})
	c.url = "http://" + addr + "/mcp"

	for range lbClients {
		c.clients = append(c.clients, &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 1,
			DisableCompression:  true,
		}})
	}
	c.warm(b)
	return c
}

// warm makes one call through HAProxy from every client, so that every
// client has its connection open.
func (c *lbCluster) warm(b *testing.B) {
	b.Helper()
	errs := make(chan error, len(c.clients))
	for _, cl := range c.clients {
		go func() { errs <- lbCall(cl, c.url) }()
	}
	for range c.clients {
		if err := <-errs; err != nil {
			b.Fatalf("warm-up: %v\n%s", err, c.haproxy.stderr.String())
		}
	}
}

// stop ends HAProxy and the replicas, and closes the clients' connections.
func (c *lbCluster) stop(b *testing.B) {
	for _, cl := range c.clients {
		cl.CloseIdleConnections()
	}
	c.haproxy.stop(b)
	for _, p := range c.replicas {
		p.stop(b)
	}
}

// run makes b.N calls through HAProxy, spread over the clients, reports
// the metrics and returns calls/s.
func (c *lbCluster) run(b *testing.B) float64 {
	c.warm(b)
	var (
		next      atomic.Int64
		failed    atomic.Bool
		firstErr  error
		errOnce   sync.Once
		wg        sync.WaitGroup
		latencies = make([][]time.Duration, len(c.clients))
	)
	pids := c.pids(b)
	cpu0 := lbCPU(b, pids)
	b.ResetTimer()
	start := time.Now()
	for i, cl := range c.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, b.N/len(c.clients)+1)
			for next.Add(1) <= int64(b.N) && !failed.Load() {
				t := time.Now()
				if err := lbCall(cl, c.url); err != nil {
					errOnce.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
				lat = append(lat, time.Since(t))
			}
			latencies[i] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatalf("%v\nhaproxy:\n%s", firstErr, c.haproxy.stderr.String())
	}
	cpu1 := lbCPU(b, pids)

	all := slices.Concat(latencies...)
	slices.Sort(all)
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "calls/s")
	b.ReportMetric(float64(all[len(all)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100])/1e6, "p99-ms")
	var total time.Duration
	for _, k := range []string{"haproxy", "agenthost", "plugin", "client"} {
		d := cpu1[k] - cpu0[k]
		total += d
		b.ReportMetric(float64(d.Microseconds())/float64(b.N), "cpu-us-"+k+"/call")
	}
	b.ReportMetric(total.Seconds()/elapsed.Seconds(), "cpu-cores")
	// What else kept the machine busy meanwhile: other processes skew
	// the figures.
	other := cpu1["machine"] - cpu0["machine"] - total
	b.ReportMetric(max(other, 0).Seconds()/elapsed.Seconds(), "cpu-cores-other")
	return rate
}

// pids returns the processes of the cluster by kind: haproxy, agenthost
// (the replicas) and plugin (every descendant of a replica).
func (c *lbCluster) pids(b *testing.B) map[string][]int {
	b.Helper()
	parents := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(pid); len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				parents[pid] = ppid
			}
		}
	}
	pids := map[string][]int{"haproxy": {c.haproxy.cmd.Process.Pid}}
	replica := map[int]bool{}
	for _, p := range c.replicas {
		replica[p.cmd.Process.Pid] = true
		pids["agenthost"] = append(pids["agenthost"], p.cmd.Process.Pid)
	}
	for pid := range parents {
		for a, seen := parents[pid], 0; a > 1 && seen < 64; a, seen = parents[a], seen+1 {
			if replica[a] {
				pids["plugin"] = append(pids["plugin"], pid)
				break
			}
		}
	}
	return pids
}

// procStat returns the fields of /proc/PID/stat after the command name:
// state, ppid, ...
func procStat(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+1:]))
}

// lbCPU returns the CPU time (user and system) used so far by each kind
// of process in pids, by this process as "client", and by the whole
// machine as "machine".
func lbCPU(b *testing.B, pids map[string][]int) map[string]time.Duration {
	b.Helper()
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	cpu := map[string]time.Duration{}
	for k, list := range pids {
		for _, pid := range list {
			// utime and stime are fields 14 and 15 of the whole line.
			if f := procStat(pid); len(f) > 13 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				s, _ := strconv.ParseInt(f[12], 10, 64)
				cpu[k] += time.Duration(u+s) * tick
			}
		}
	}
	// The whole machine's busy time, from the first line of /proc/stat:
	// "cpu", then user nice system idle iowait irq softirq ...; interrupts
	// not charged to a process count as the machine's.
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(data, []byte("\n"))
		if f := strings.Fields(string(line)); len(f) > 7 {
			for _, i := range []int{1, 2, 3, 6, 7} {
				n, _ := strconv.ParseInt(f[i], 10, 64)
				cpu["machine"] += time.Duration(n) * tick
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	cpu["client"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu
}

// lbCall makes one call of read_file at u with client cl, and checks that
// its answer is the file's text.
func lbCall(cl *http.Client, u string) error {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(lbCallBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", lbProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "read_file")
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	data := body
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// One event: its data line is the response.
		data = nil
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = bytes.TrimSpace(d)
				break
			}
		}
	}
	var r struct {
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("answer %q: %v", body, err)
	}
	switch {
	case r.Error != nil:
		return fmt.Errorf("error %d: %s", r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return errors.New("no result: " + string(body))
	case r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != lbFileText:
		return errors.New("not the file's text: " + string(body))
	}
	return nil
}
