package mcptest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// startTimeout bounds how long a server over HTTP may take to answer.
const startTimeout = 20 * time.Second

// EverythingHTTP starts @modelcontextprotocol/server-everything over
// streamable HTTP on a free port of 127.0.0.1 (and only there), waits
// until it answers, and returns its MCP endpoint,
// http://127.0.0.1:PORT/mcp. The server's process group is killed in
// t.Cleanup.
func EverythingHTTP(t testing.TB) (url string) {
	t.Helper()
	node, args := Everything(t)
	args[len(args)-1] = "streamableHttp"
	// A port found free can be taken before the server binds it: try again.
	for try := 1; ; try++ {
		port := freePort(t)
		url, err := startHTTP(t, node, args, port)
		if err == nil {
			return url
		}
		if try == 3 {
			t.Fatalf("mcptest: starting the everything server over HTTP: %v", err)
		}
	}
}

// freePort is a port of 127.0.0.1 that nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startHTTP starts node with args, the server listening on port, and
// waits until its endpoint answers. The loopback preload binds the port
// on 127.0.0.1 alone.
func startHTTP(t testing.TB, node string, args []string, port int) (string, error) {
	t.Helper()
	preload := filepath.Join(Dir(t), "loopback.cjs")
	cmd := exec.Command(node, append([]string{"--require", preload}, args...)...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var stderr plugintest.Buffer
	cmd.Stderr = &stderr // stdout, where the server chatters, is discarded
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		killGroup(cmd)
		<-exited
	}

	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		// Any HTTP answer says it serves: a GET without a session is
		// refused with 400.
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			t.Cleanup(stop)
			return url, nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("the server exited: %s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("no answer at %s after %v: %s", url, startTimeout, stderr.String())
		}
	}
}
