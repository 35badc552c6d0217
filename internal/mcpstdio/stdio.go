// Package mcpstdio is MCP's stdio transport, for either end of a
// session: one JSON-RPC message (or a batch) a line, each way.
package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is MCP's stdio transport. It is the SDK's IOTransport less
// what a call does not need, and less its end of the session at the
// first line that is not a message: the SDK decodes each message it reads twice (as a batch,
// then as a message) with a JSON decoder that allocates 32 KiB for every
// value it decodes, however small, and hands each message from a goroutine
// of its own to the one that reads. Here a line is read into a buffer that
// is kept, decoded once with encoding/json, by the goroutine that reads.
type Transport struct {
	// R is read for the peer's messages and W written with ours. The
	// session closes both when it ends; closing R must end a Read under
	// way, as it does for an *os.File or an *io.PipeReader.
	R io.ReadCloser
	W io.WriteCloser

	// Peer names the other end in errors, as "the server" or "the
	// client".
	Peer string

	// MaxMessage bounds one line with its newline; a longer one ends
	// the session.
	MaxMessage int

	// Answer makes a line that is not a JSON-RPC message no end of the
	// session: it is answered with a JSON-RPC error, -32700 (Parse
	// error) when it is not JSON and -32600 (Invalid Request) when it
	// is JSON but not a message, and the next line is read. A server's
	// end sets it; a client's end leaves it unset, as a server that
	// writes such a line is broken.
	Answer bool

	// Seen, when set, is called with each message a Read returns, on the
	// goroutine that reads, before it returns it.
	Seen func(jsonrpc.Message)

	// broken is the first reason a Read ended the session: a line too
	// long, one that is not a message (see Broken).
	broken atomic.Pointer[error]
}

var _ mcp.Transport = (*Transport)(nil)

// Broken returns why the peer's stream ended a session of t, when it did
// (a line longer than MaxMessage, one that is not JSON-RPC), or nil: the
// SDK tells the requests under way only that the connection closed.
func (t *Transport) Broken() error {
	if p := t.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// Connect returns the session's connection.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	return &stdioConn{in: bufio.NewReaderSize(t.R, readBuffer), max: t.MaxMessage, peer: t.Peer, answer: t.Answer, r: t.R, w: t.W, t: t}, nil
}

const (
	// readBuffer is the size of the buffer a line is read through: a
	// line that fits is decoded where it lies.
	readBuffer = 64 << 10
	// keptLine bounds the buffer that a longer line is gathered in and
	// that is kept for the next one.
	keptLine = 1 << 20
)

// stdioConn is one session's stdio connection. The SDK reads from one
// goroutine, and may write from many, and close from any.
type stdioConn struct {
	t      *Transport
	r      io.ReadCloser
	in     *bufio.Reader
	max    int               // the longest line, with its newline
	peer   string            // the other end, as errors name it
	answer bool              // see Transport.Answer
	long   []byte            // a line longer than in's buffer, gathered
	queue  []jsonrpc.Message // the messages of a batch not yet read

	writeMu sync.Mutex
	w       io.WriteCloser

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ mcp.Connection = (*stdioConn)(nil)

func (c *stdioConn) SessionID() string { return "" }

// Read returns the next message. Close makes a Read under way return
// io.EOF, provided that closing r ends it, as it does for a pipe.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.read(ctx)
	if err == nil && c.t.Seen != nil {
		c.t.Seen(msg)
	}
	return msg, err
}

// read is Read, but for Transport.Seen.
func (c *stdioConn) read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		return msg, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			if c.closed.Load() {
				return nil, io.EOF
			}
			if tooLong := (*tooLongError)(nil); errors.As(err, &tooLong) {
				c.t.broken.CompareAndSwap(nil, &err)
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msgs, err := c.decode(line)
		if err == nil {
			c.queue = msgs[1:]
			return msgs[0], nil
		}
		if !c.answer {
			broken := fmt.Errorf("%s sent a line that is not a JSON-RPC message: %w", c.peer, err)
			c.t.broken.CompareAndSwap(nil, &broken)
			return nil, err
		}
		if err := c.answerInvalid(line); err != nil {
			return nil, err
		}
	}
}

// decode decodes a line: a message, or a batch of them.
func (c *stdioConn) decode(line []byte) ([]jsonrpc.Message, error) {
	if line[0] == '[' {
		return decodeBatch(line, c.peer)
	}
	msg, err := decodeMessage(line, c.peer)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{msg}, nil
}

// answerInvalid answers a line that is not a message, as JSON-RPC says:
// with an error whose id is null, since the line's id cannot be trusted.
func (c *stdioConn) answerInvalid(line []byte) error {
	wireErr := jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request"}
	if !json.Valid(line) {
		wireErr = jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error"}
	}
	data, err := json.Marshal(struct {
		Version string         `json:"jsonrpc"`
		ID      *int           `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &wireErr})
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// tooLongError is a line longer than the limit.
type tooLongError struct {
	peer string
	max  int
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("%s sent a message longer than %d bytes", e.peer, e.max)
}

// readLine reads the next line, up to c.max bytes with its newline. The
// line is valid until the next call.
func (c *stdioConn) readLine() ([]byte, error) {
	if cap(c.long) > keptLine {
		c.long = nil
	}
	c.long = c.long[:0]
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(c.long)+len(chunk) > c.max {
			return nil, &tooLongError{c.peer, c.max}
		}
		switch {
		case err == nil && len(c.long) == 0:
			return chunk, nil
		case err == nil:
			return append(c.long, chunk...), nil
		case errors.Is(err, bufio.ErrBufferFull):
			c.long = append(c.long, chunk...)
		case errors.Is(err, io.EOF) && len(c.long)+len(chunk) > 0:
			// The last line, without its newline: the next read
			// says EOF.
			return append(c.long, chunk...), nil
		default:
			return nil, err
		}
	}
}

// decodeBatch decodes a JSON-RPC batch: an array of messages.
func decodeBatch(line []byte, peer string) ([]jsonrpc.Message, error) {
	var batch []json.RawMessage
	if err := json.Unmarshal(line, &batch); err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return nil, fmt.Errorf("%s sent an empty batch", peer)
	}
	msgs := make([]jsonrpc.Message, len(batch))
	for i, raw := range batch {
		msg, err := decodeMessage(raw, peer)
		if err != nil {
			return nil, err
		}
		msgs[i] = msg
	}
	return msgs, nil
}

// decodeMessage decodes one JSON-RPC message as the SDK does: a request
// (or notification) when it has a method, a response otherwise; member
// names match exactly, not regardless of case. The message does not
// share memory with data.
func decodeMessage(data []byte, peer string) (jsonrpc.Message, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, err
	}
	var version string
	if err := json.Unmarshal(members["jsonrpc"], &version); err != nil || version != "2.0" {
		return nil, fmt.Errorf(`%s sent a message that is not JSON-RPC 2.0 (its "jsonrpc" is not "2.0")`, peer)
	}
	var rawID any
	if raw, ok := members["id"]; ok {
		if err := json.Unmarshal(raw, &rawID); err != nil {
			return nil, err
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if raw, ok := members["method"]; ok {
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, err
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: members["params"]}, nil
	}
	if !id.IsValid() {
		return nil, fmt.Errorf("%s sent a response without an id", peer)
	}
	resp := &jsonrpc.Response{ID: id, Result: members["result"]}
	if raw := members["error"]; raw != nil && string(raw) != "null" {
		var wireErr jsonrpc.Error
		if err := json.Unmarshal(raw, &wireErr); err != nil {
			return nil, err
		}
		resp.Error = &wireErr
	}
	return resp, nil
}

// Write writes msg as one line.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	return c.writeLine(data)
}

// encodeMessage is jsonrpc.EncodeMessage, less a pass over a result: a
// successful response's result is copied as it is, where EncodeMessage
// would scan and compact it again, once more than the SDK did when it
// marshalled it (every result the SDK sends is its own marshalled value:
// valid, compact JSON). A tool's answer of 100 KiB is then scanned one
// time less on its way out. A result holding a line break, which would
// end the line early, and every other message take EncodeMessage's way.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || bytes.IndexByte(resp.Result, '\n') >= 0 || bytes.IndexByte(resp.Result, '\r') >= 0 {
		return jsonrpc.EncodeMessage(msg)
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	var data []byte
	switch id := resp.ID.Raw().(type) {
	case int64:
		data = make([]byte, 0, len(head)+20+len(mid)+len(resp.Result)+2)
		data = strconv.AppendInt(append(data, head...), id, 10)
	case string:
		// As the SDK quotes it: without escaping <, > and &.
		var quoted bytes.Buffer
		enc := json.NewEncoder(&quoted)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(id); err != nil {
			return nil, err
		}
		data = make([]byte, 0, len(head)+quoted.Len()+len(mid)+len(resp.Result)+2)
		data = append(append(data, head...), bytes.TrimSuffix(quoted.Bytes(), []byte("\n"))...)
	default:
		return jsonrpc.EncodeMessage(msg)
	}
	data = append(append(data, mid...), resp.Result...)
	return append(data, '}'), nil
}

// writeLine writes data and a newline, as one write.
func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Close closes both ends. It may be called more than once, and while a
// Read is under way.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}
