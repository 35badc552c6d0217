package proc

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/agenthost/agenthost/internal/wire"
)

// A plugin's connection to the host is one of a connected pair of unix
// sockets that the host makes for each launch: the plugin's end is
// passed to it as a descriptor (wire.ConnEnv), the host's end is what
// gRPC gets when go-plugin dials. No socket has a name: there is nothing
// another process could find and connect to, so no process can speak to
// a plugin with its host's voice and borrow its rights. (go-plugin's
// AutoMTLS would guard a named socket with certificates instead, for
// about 20 ms of key generation at every launch.)

// Pair makes the pair: the host's end and the plugin's, both
// close-on-exec in the host.
func Pair() (host, plugin *os.File, err error) {
	// Under the fork lock, as Go's net package makes sockets where the
	// kernel cannot make them close-on-exec at once: no process started
	// meanwhile gets a copy.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), "plugin connection"), os.NewFile(uintptr(fds[1]), "host connection"), nil
}

// Conn is the host's end of one launch's connection, handed to
// gRPC once (Dial).
type Conn struct {
	// FD is the plugin's descriptor number for its end; set it before
	// the plugin starts.
	FD int

	mu   sync.Mutex
	host *os.File // nil once handed over
	// path is the socket of a plugin that listens on one of its own
	// instead, as its handshake line says (see Dial).
	path string
}

// errConnUsed is what a second dial gets: gRPC reconnects after its
// transport broke, which means the plugin is gone.
var errConnUsed = errors.New("the plugin's connection is closed")

// NewConn returns the connection whose host end is host (Pair).
func NewConn(host *os.File) *Conn { return &Conn{host: host} }

// Dial is gRPC's dialer: it hands over the host's end, once. A plugin
// that answers, in its handshake, with a socket path of its own (one
// written for a host before protocol 1.5, allowed unix sockets) is
// dialled there.
func (c *Conn) Dial(ctx context.Context, _ string) (net.Conn, error) {
	c.mu.Lock()
	f, path := c.host, c.path
	c.host = nil
	c.mu.Unlock()
	if path != "" {
		if f != nil {
			f.Close()
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	if f == nil {
		return nil, errConnUsed
	}
	defer f.Close()
	return net.FileConn(f)
}

// CloseUnused closes the host's end if gRPC never took it.
func (c *Conn) CloseUnused() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host != nil {
		c.host.Close()
		c.host = nil
	}
}

// handshake takes note of the address the plugin's handshake line gives:
// "fd:N", its end of the connection, or the path of a socket of its own.
func (c *Conn) handshake(network, addr string) {
	if network == "unix" && addr != wire.ConnAddrPrefix+strconv.Itoa(c.FD) {
		c.mu.Lock()
		c.path = addr
		c.mu.Unlock()
	}
}
