package proc

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
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// DrainGrace is how long a plugin's output is still read after its
// process has exited: what it wrote last arrives, and a grandchild that
// holds the pipes open cannot hold up the host beyond it. Output that the
// pipes already hold by then is read all the same, for up to DrainMax:
// it is the plugin's last words, which a busy host may not have got to.
const (
	DrainGrace = 200 * time.Millisecond
	DrainMax   = time.Second
)

// Runner starts a plugin binary the way the host needs it:
//   - with no stdin, and its stdout read only by go-plugin's handshake, so
//     a plugin can never read or write the host's own stdio (which carries
//     MCP in server mode);
//   - in a process group of its own, which Kill signals whole, so the
//     plugin's children go with it;
//   - on Linux, with a parent-death signal, so the plugin does not outlive
//     a host that was killed without a chance to clean up;
//   - inside its sandbox (policy), when it has one;
//   - with output pipes that end when the process does: go-plugin reaps a
//     plugin only after its stdout and stderr reach EOF, which a grandchild
//     holding them would postpone for ever. The runner waits for the
//     process itself, and a short drain after the process has exited it
//     closes the pipes go-plugin reads;
//   - for a plugin (SpeaksGoPlugin), with its handshake line checked in the
//     host's words before go-plugin reads it, and its stderr logged by the
//     host rather than by go-plugin (see LogStderr).
type Runner struct {
	logger hclog.Logger
	cmd    *exec.Cmd
	path   string
	pid    int
	// Policy is the sandbox the process starts in; nil: none. Set it
	// before Start. proc is the process in it, once started.
	Policy *sandbox.Policy
	proc   *sandbox.Process
	// Conn is the host's end of a plugin's connection, when the host
	// made one (go-plugin plugins); nil for an MCP server. Set it before
	// Start.
	Conn *Conn

	// The OS pipes the process writes to, and the pipes go-plugin reads,
	// fed from them.
	osOut, osErr *os.File
	outR, errR   *io.PipeReader
	outW, errW   *io.PipeWriter
	childEnds    []*os.File // closed in the host once the process has them

	done     chan struct{} // closed when the process has been waited for
	outEnded chan struct{} // closed when its stdout has reached its end
	waitErr  error         // how it ended, once done is closed
	finished chan struct{} // closed once its output is read to the end, or given up on
	mu       sync.Mutex    // guards reaped against signals to the group
	reaped   bool
	tail     Words // what it wrote to stderr that says why it failed

	// handshake: stdout starts with go-plugin's handshake line, which is
	// checked (checkHandshake); badLine says what was wrong with it, under
	// mu. pluginLog, when set, logs the stderr of a plugin.
	handshake bool
	badLine   error
	pluginLog hclog.Logger
}

var _ runner.Runner = (*Runner)(nil)

// Done is closed once the process has been waited for.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Finished is closed once the process's output has been read to the end,
// or given up on (DrainGrace, DrainMax).
func (r *Runner) Finished() <-chan struct{} { return r.finished }

// PID is the process's id; 0 until it started.
func (r *Runner) PID() int { return r.pid }

// NewRunner returns the runner of cmd, which starts the plugin binary
// at path (cmd.Path may name it otherwise, see openedBinary.execPath).
func NewRunner(logger hclog.Logger, cmd *exec.Cmd, path string) (*Runner, error) {
	cmd.Stdin = nil
	cmd.SysProcAttr = pluginSysProcAttr()
	osOut, childOut, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	osErr, childErr, err := os.Pipe()
	if err != nil {
		osOut.Close()
		childOut.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = childOut, childErr
	r := &Runner{
		logger: logger, cmd: cmd, path: path,
		osOut: osOut, osErr: osErr,
		childEnds: []*os.File{childOut, childErr},
		done:      make(chan struct{}),
		outEnded:  make(chan struct{}),
		finished:  make(chan struct{}),
	}
	r.outR, r.outW = io.Pipe()
	r.errR, r.errW = io.Pipe()
	return r, nil
}

// SpeaksGoPlugin has the runner check the plugin's handshake line and log
// its stderr to logger, rather than leave both to go-plugin. Call it
// before Start.
func (r *Runner) SpeaksGoPlugin(logger hclog.Logger) {
	r.handshake = true
	r.pluginLog = logger
}

// OpenStdin gives the process a pipe for its stdin, instead of none, and
// returns the host's end of it: an MCP server over stdio reads its
// requests there. Call it before Start; the caller closes the end.
func (r *Runner) OpenStdin() (*os.File, error) {
	child, host, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	r.cmd.Stdin = child
	r.childEnds = append(r.childEnds, child)
	return host, nil
}

func (r *Runner) Start(context.Context) error {
	var err error
	if r.Policy != nil {
		r.proc, err = sandbox.Start(r.cmd, r.Policy)
	} else {
		err = r.cmd.Start()
	}
	for _, f := range r.childEnds {
		f.Close()
	}
	if err != nil {
		r.ClosePipes()
		close(r.finished)
		return err
	}
	if r.proc != nil {
		r.pid = r.proc.Pid()
	} else {
		r.pid = r.cmd.Process.Pid
	}
	r.logger.Debug("plugin started", "path", r.path, "pid", r.pid)

	var copies sync.WaitGroup
	copies.Go(func() {
		defer close(r.outEnded)
		if r.handshake {
			r.checkHandshake()
		} else {
			copyOut(r.outW, r.osOut, nil)
		}
	})
	if r.pluginLog != nil {
		// go-plugin's end stays empty: it would log the same lines,
		// less well (see LogStderr).
		copies.Go(func() { LogStderr(r.pluginLog, r.osErr, &r.tail) })
	} else {
		copies.Go(func() { copyOut(r.errW, r.osErr, &r.tail) })
	}
	go func() {
		// Learn of the exit without reaping: while the plugin is a
		// zombie its pid cannot be reused, so its process group can be
		// signalled safely. What it left in its group goes with it;
		// after the reap, the group is never signalled again.
		if waitExited(r.pid) {
			_ = r.SignalGroup(syscall.SIGKILL)
		}
		r.mu.Lock()
		// cmd's stdout and stderr are files, so Wait does not wait for
		// the pipes: only for the process. Under a sandbox's stage, that
		// is the stage; it says how the program ended.
		if r.proc != nil {
			r.waitErr = r.proc.Wait()
		} else {
			r.waitErr = r.cmd.Wait()
		}
		if ws, ok := r.proc.ExitStatus(); ok {
			r.waitErr = waitError(ws)
		}
		r.reaped = true
		r.mu.Unlock()
		r.proc.Release()
		close(r.done)
		drained := make(chan struct{})
		go func() { copies.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(DrainGrace):
			if !r.drainUnread(drained) {
				r.logger.Debug("plugin output still open after it exited; closing it", "path", r.path, "pid", r.pid)
			}
		}
		r.ClosePipes()
		// Closed, the pipes end the copies' reads: what they read is
		// written, or logged, before finished says the output is done.
		select {
		case <-drained:
		case <-time.After(DrainMax):
		}
		close(r.finished)
	}()
	return nil
}

// drainUnread waits, up to DrainMax, until the process's pipes hold no
// output that has not been read, and reports whether they reached their
// end (drained) meanwhile.
func (r *Runner) drainUnread(drained <-chan struct{}) bool {
	limit := time.NewTimer(DrainMax)
	defer limit.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for unread(r.osOut) || unread(r.osErr) {
		select {
		case <-drained:
			return true
		case <-limit.C:
			return false
		case <-poll.C:
		}
	}
	select {
	case <-drained:
		return true
	default:
		return false
	}
}

// copyOut feeds go-plugin's end from the process's pipe until either ends,
// and tail too when it is not nil.
func copyOut(w *io.PipeWriter, f *os.File, tail *Words) {
	var dst io.Writer = w
	if tail != nil {
		dst = io.MultiWriter(tail, w)
		defer tail.flush()
	}
	_, err := io.Copy(dst, f)
	if errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		err = nil
	}
	w.CloseWithError(err)
}

// ClosePipes gives go-plugin EOF and releases the host's ends of the OS
// pipes, whoever else still holds theirs.
func (r *Runner) ClosePipes() {
	r.outW.Close()
	r.errW.Close()
	r.osOut.Close()
	r.osErr.Close()
}

// Wait waits for the process and its output, and says how it ended.
func (r *Runner) Wait(context.Context) error {
	<-r.done
	return r.waitErr
}

// Kill kills the plugin's whole process group. A plugin under a stage
// (sandbox.Start) that has closed its output has most likely exited, and
// its stage is saying how: it is given stageGrace to, so that the
// plugin's own exit status is not lost to the kill (go-plugin kills a
// plugin whose output ends before its handshake).
func (r *Runner) Kill(context.Context) error {
	if r.proc != nil {
		select {
		case <-r.outEnded:
			select {
			case <-r.done:
			case <-time.After(stageGrace):
			}
		default:
		}
	}
	return r.KillGroup()
}

// stageGrace bounds the wait for a plugin's stage to report the exit of
// a plugin that closed its output, before it is killed.
const stageGrace = 100 * time.Millisecond

func (r *Runner) KillGroup() error { return r.SignalGroup(syscall.SIGKILL) }

// SignalGroup signals the plugin's process group, unless the plugin has
// been reaped: from then on its number may belong to another process.
func (r *Runner) SignalGroup(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 || r.reaped {
		return nil
	}
	err := syscall.Kill(-r.pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling process group %d: %w", r.pid, err)
	}
	return nil
}

// Exited reports whether the process has ended, and how.
func (r *Runner) Exited() (bool, error) {
	select {
	case <-r.done:
		return true, r.waitErr
	default:
		return false, nil
	}
}

func (r *Runner) Stdout() io.ReadCloser { return r.outR }
func (r *Runner) Stderr() io.ReadCloser { return r.errR }
func (r *Runner) Name() string          { return r.path }
func (r *Runner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *Runner) Diagnose(context.Context) string {
	info, err := os.Stat(r.path)
	switch {
	case err != nil:
		return err.Error()
	case info.Mode()&0o111 == 0:
		return "the file is not executable"
	}
	return "it is not an agenthost plugin, or it was built for another system or protocol version"
}

func (r *Runner) PluginToHost(network, addr string) (string, string, error) {
	if r.Conn != nil {
		r.Conn.handshake(network, addr)
	}
	return network, addr, nil
}

func (r *Runner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// waitError is what exec.Cmd's Wait says of a process that ended with
// ws: nil for a successful exit, else an error worded as exec.ExitError
// words it ("exit status 2", "signal: killed").
func waitError(ws syscall.WaitStatus) error {
	var msg string
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Exited():
		msg = "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		msg = "signal: " + ws.Signal().String()
	default:
		msg = fmt.Sprintf("wait status %#x", uint32(ws))
	}
	if ws.CoreDump() {
		msg += " (core dumped)"
	}
	return errors.New(msg)
}
