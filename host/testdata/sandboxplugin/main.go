// Command sandboxplugin is a third-party plugin that tries to get out of
// its sandbox, for the host's sandbox tests. Its one tool, attack, does
// one thing with raw system calls, so that the answer is the kernel's
// own: "ok", or the errno's text ("permission denied", "operation not
// permitted").
//
//	read        open the file arg and read a byte of it
//	write_home  create the file arg in the home directory ($HOME)
//	rw          create the file arg, write it, and read it back
//	connect     connect to the TCP port arg on 127.0.0.1
//	bind        bind a TCP port on 127.0.0.1
//	exec        fork and execute the shell arg, which runs "exit 0"
//	signal      send SIGWINCH to the process arg
//	abstract    connect to the abstract unix socket arg
//	unix        connect to the unix socket file arg
//	udp         send a datagram to the UDP port arg on 127.0.0.1
//	alloc       map arg bytes of private memory (without touching them)
//
// It declares what a plugin needing more than the defaults would: the
// network, other programs, and a directory to read in the home
// directory, so that "asked" grants have something to grant.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/sdk"
)

// declared is what the plugin declares it needs.
var declared = sdk.Permissions{
	Roots:   sdk.RootsReadWrite,
	Read:    []string{"~/declared"},
	Network: true,
	Exec:    true,
}

type input struct {
	Kind string `json:"kind" jsonschema:"what to try: read, write_home, rw, connect, bind, exec, signal, abstract, unix, udp or alloc"`
	Arg  string `json:"arg,omitempty" jsonschema:"a path, a port, a process id or a socket name"`
}

func main() {
	sdk.ServePlugin(sdk.Plugin{
		Tools: []sdk.Tool{sdk.NewTool(sdk.Info{
			Name:        "attack",
			Description: "Try one thing a sandboxed plugin should not be able to do, and say how it went.",
		}, attack)},
		Permissions: declared,
	})
}

// attack answers "ok" or the errno of the system call that failed; a
// Go error only for a call it does not understand.
func attack(ctx context.Context, in input) (string, error) {
	var err error
	switch in.Kind {
	case "read":
		err = readFile(in.Arg)
	case "write_home":
		err = createFile(filepath.Join(os.Getenv("HOME"), in.Arg), []byte("pwned"))
	case "rw":
		err = readWrite(in.Arg)
	case "connect":
		err = connectTCP(in.Arg)
	case "bind":
		err = bindTCP()
	case "exec":
		err = execShell(in.Arg)
	case "signal":
		err = signal(in.Arg)
	case "abstract":
		err = connectUnix("@" + in.Arg)
	case "unix":
		err = connectUnix(in.Arg)
	case "udp":
		err = sendUDP(in.Arg)
	case "alloc":
		err = alloc(in.Arg)
	default:
		return "", fmt.Errorf("unknown kind %q", in.Kind)
	}
	if err != nil {
		return err.Error(), nil
	}
	return "ok", nil
}

func readFile(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Read(fd, make([]byte, 1))
	return err
}

func createFile(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

func readWrite(path string) error {
	want := []byte("legitimate work")
	if err := createFile(path, want); err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	got := make([]byte, 64)
	n, err := unix.Read(fd, got)
	if err != nil {
		return err
	}
	if !bytes.Equal(got[:n], want) {
		return fmt.Errorf("read back %q", got[:n])
	}
	return nil
}

func connectTCP(port string) error {
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}})
}

func bindTCP() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
}

// execShell starts the shell with no standard files (the plugin's
// stdout is the host's handshake pipe) and waits for it. The execve
// happens in the child: its errno comes back from ForkExec.
func execShell(shell string) error {
	pid, err := syscall.ForkExec(shell, []string{shell, "-c", "exit 0"}, &syscall.ProcAttr{Env: []string{}})
	if err != nil {
		return err
	}
	var status syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &status, 0, nil); err != nil {
		return err
	}
	if !status.Exited() || status.ExitStatus() != 0 {
		return errors.New("the shell failed: " + strconv.Itoa(int(status)))
	}
	return nil
}

func signal(pid string) error {
	p, err := strconv.Atoi(pid)
	if err != nil {
		return err
	}
	return unix.Kill(p, unix.SIGWINCH)
}

func connectUnix(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: name})
}

func sendUDP(port string) error {
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Sendto(fd, []byte("exfiltrated"), 0, &unix.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}})
}

func alloc(size string) error {
	n, err := strconv.Atoi(size)
	if err != nil {
		return err
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	return unix.Munmap(b)
}
