package mcpsource

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/errs"
)

// maxMessage bounds the words of an error that come from the server.
const maxMessage = 4 << 10

// endGrace is how long an error that is neither an answer nor a known
// sign of a closed connection waits to learn whether the session ended
// with it, which decides its words.
const endGrace = 500 * time.Millisecond

// errClosed is the cause of a request's context when Close ends it.
var errClosed = errors.New("the session was closed")

// failure is an error whose message is written for a person and whose
// causes are there for errors.Is and errors.As.
type failure struct {
	msg    string
	causes []error
}

func (f *failure) Error() string   { return f.msg }
func (f *failure) Unwrap() []error { return f.causes }

// BrokenError is a request that failed because the server broke the
// session's stream: a message longer than the limit (64 MiB + 1 MiB), a
// line that never ends, one that is not JSON-RPC. The session is over.
type BrokenError struct {
	// Reason says what the server sent.
	Reason error
	err    error
}

func (e *BrokenError) Error() string   { return "the server broke the session: " + cut(e.Reason.Error()) }
func (e *BrokenError) Unwrap() []error { return []error{mcp.ErrConnectionClosed, e.err} }

// brokenStream is a transport that says why the server's stream ended a
// session (mcpstdio.Transport).
type brokenStream interface{ Broken() error }

// describe turns err, from a request sent under ctx, into words that say
// what happened, prefixed with what ("" for none). done is the session's
// Done channel, nil during the handshake; t is the session's transport.
func describe(ctx context.Context, t mcp.Transport, done <-chan struct{}, what string, err error) error {
	if b, ok := t.(brokenStream); ok && ctx.Err() == nil {
		if reason := b.Broken(); reason != nil {
			var f error = &BrokenError{Reason: reason, err: err}
			if what != "" {
				f = fmt.Errorf("%s: %w", what, f)
			}
			return f
		}
	}
	f := classify(ctx, done, err)
	if what != "" {
		f.msg = what + ": " + f.msg
	}
	return f
}

func classify(ctx context.Context, done <-chan struct{}, err error) *failure {
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errClosed):
			return &failure{"the session was closed", []error{mcp.ErrConnectionClosed, ctx.Err()}}
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return &failure{"the server did not answer before the deadline", []error{ctx.Err()}}
		default:
			return &failure{"the request was canceled", []error{ctx.Err()}}
		}
	}
	var authErr *AuthError
	if errors.As(err, &authErr) {
		// A refusal for want of authorization says what to do itself.
		return &failure{authErr.Error(), []error{err}}
	}
	if closedConnection(err) {
		return &failure{"the connection to the server is closed", []error{mcp.ErrConnectionClosed, err}}
	}
	// The server's error answer is the end of the chain; the SDK's own
	// JSON-RPC errors (a request the transport could not send) are joined
	// with their reason.
	if answer, ok := errs.Innermost(err).(*jsonrpc.Error); ok {
		msg := fmt.Sprintf("the server answered: %s (code %d)", cut(answer.Message), answer.Code)
		return &failure{msg, []error{err}}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return &failure{"the server could not be reached: " + cut(opErr.Error()), []error{err}}
	}
	if reason, ok := undecodable(err); ok {
		return &failure{"the server's answer could not be used: " + reason, []error{err}}
	}
	cause := cut(errs.Innermost(err).Error())
	if ended(done) {
		return &failure{"the connection to the server broke: " + cause, []error{mcp.ErrConnectionClosed, err}}
	}
	return &failure{"the request failed: " + cause, []error{err}}
}

// closedConnection reports whether err says that the connection was closed
// at either end.
func closedConnection(err error) bool {
	for _, target := range []error{mcp.ErrConnectionClosed, io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, net.ErrClosed, os.ErrClosed, syscall.EPIPE, syscall.ECONNRESET} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// ended reports whether done is closed, or closes within endGrace.
func ended(done <-chan struct{}) bool {
	if done == nil {
		return false
	}
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// undecodable says what an error of the SDK's decoding of an answer
// means, without the Go types it names, if err is one. (A line that is
// not JSON at all is not one: it breaks the stream, not an answer.)
func undecodable(err error) (string, bool) {
	var typeErr *json.UnmarshalTypeError
	var base64Err base64.CorruptInputError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return "it has a value of the wrong kind at " + cutTo(typeErr.Field, 200), true
		}
		return "it has a value of the wrong kind", true
	case errors.As(err, &base64Err):
		return fmt.Sprintf("its base64 data is invalid at byte %d", int64(base64Err)), true
	}
	msg := errs.Innermost(err).Error()
	for _, sign := range []string{"content type", "nil content", "nesting depth"} {
		if strings.Contains(msg, sign) {
			return cut(msg), true
		}
	}
	return "", false
}

// cut bounds s, which comes from the server, to maxMessage bytes.
func cut(s string) string {
	return cutTo(s, maxMessage)
}

// cutTo bounds s to max bytes, cut at a character's start, saying how
// much was cut.
func cutTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + fmt.Sprintf("… (%d more bytes)", len(s)-end)
}
