package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
)

// groupRunner starts a plugin binary the way the host needs it:
//   - with no stdin, and its stdout read only by go-plugin's handshake, so
//     a plugin can never read or write the host's own stdio (which carries
//     MCP in server mode);
//   - in a process group of its own, which Kill signals whole, so the
//     plugin's children go with it;
//   - on Linux, with a parent-death signal, so the plugin does not outlive
//     a host that was killed without a chance to clean up.
type groupRunner struct {
	logger hclog.Logger
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	path   string
	pid    int

	done    chan struct{} // closed when the process has been waited for
	waitErr error         // how it ended, once done is closed
	once    sync.Once
}

var _ runner.Runner = (*groupRunner)(nil)

func newGroupRunner(logger hclog.Logger, cmd *exec.Cmd) (*groupRunner, error) {
	cmd.Stdin = nil
	cmd.SysProcAttr = pluginSysProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &groupRunner{logger: logger, cmd: cmd, stdout: stdout, stderr: stderr, path: cmd.Path, done: make(chan struct{})}, nil
}

func (r *groupRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.pid = r.cmd.Process.Pid
	r.logger.Debug("plugin started", "path", r.path, "pid", r.pid)
	return nil
}

// Wait waits for the process and records how it ended.
func (r *groupRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.once.Do(func() {
		r.waitErr = err
		close(r.done)
	})
	return err
}

// Kill kills the plugin's whole process group.
func (r *groupRunner) Kill(context.Context) error { return r.killGroup() }

func (r *groupRunner) killGroup() error {
	if r.pid == 0 {
		return nil
	}
	err := syscall.Kill(-r.pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group %d: %w", r.pid, err)
	}
	return nil
}

// exited reports whether the process has ended, and how.
func (r *groupRunner) exited() (bool, error) {
	select {
	case <-r.done:
		return true, r.waitErr
	default:
		return false, nil
	}
}

func (r *groupRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *groupRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *groupRunner) Name() string          { return r.path }
func (r *groupRunner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *groupRunner) Diagnose(context.Context) string {
	info, err := os.Stat(r.path)
	switch {
	case err != nil:
		return err.Error()
	case info.Mode()&0o111 == 0:
		return "the file is not executable"
	}
	return "it is not an agenthost plugin, or it was built for another system or protocol version"
}

func (r *groupRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *groupRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
