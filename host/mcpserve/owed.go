package mcpserve

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerWait bounds how long a shutdown waits, per session, for the
// answers of the calls it let finish to be written before it closes the
// session.
const answerWait = time.Second

// owedTransport is the transport of a session of Connect, whose
// connection counts the calls read and not yet answered: the SDK writes
// a call's answer after its handler returned, so a session closed as
// soon as the last call finished could lose that answer.
type owedTransport struct {
	mcp.Transport

	mu      sync.Mutex
	owed    int
	changed chan struct{} // signalled when owed drops
}

func newOwedTransport(t mcp.Transport) *owedTransport {
	return &owedTransport{Transport: t, changed: make(chan struct{}, 1)}
}

func (t *owedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &owedConn{Connection: c, t: t}, nil
}

// settle waits until every call read has been answered, for up to d.
func (t *owedTransport) settle(d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		owed := t.owed
		t.mu.Unlock()
		if owed <= 0 {
			return
		}
		select {
		case <-t.changed:
		case <-deadline.C:
			return
		}
	}
}

type owedConn struct {
	mcp.Connection
	t *owedTransport
}

func (c *owedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() {
		c.t.mu.Lock()
		c.t.owed++
		c.t.mu.Unlock()
	}
	return msg, err
}

func (c *owedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.t.mu.Lock()
		c.t.owed--
		c.t.mu.Unlock()
		select {
		case c.t.changed <- struct{}{}:
		default:
		}
	}
	return err
}
