package mcpsource

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/mcpstdio"
)

// Peer is who stands in front of one call: the client that made it, and
// what it can do when the server asks during the call. The host passes
// on what a server sends during a call to the client in front of it: its
// sampling/createMessage and elicitation/create requests, its
// notifications/progress for the call and its notifications/message.
//
// A server's request says nothing of the call it is for (over stdio,
// nothing can): it goes to the client in front of the calls in flight on
// the session when they all have one and the same client (Key); with no
// call in flight, or calls of several clients, the server is told that
// the request is not supported, and so it is when that client cannot
// answer it (its function is nil). Progress goes by the call's own
// progress token, whatever else is in flight.
type Peer struct {
	// Key says which client is in front: calls whose Peers have the same
	// non-nil Key are of the same client (one MCP session, say). A nil
	// Key is a client of its own.
	Key any
	// CreateMessage answers the server's sampling/createMessage; nil:
	// the client offers no sampling.
	CreateMessage func(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	// Elicit answers the server's elicitation/create; nil: the client
	// offers no elicitation.
	Elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Progress receives the server's notifications/progress for the call
	// (their ProgressToken is the session's own, not the client's); nil:
	// the call asks for none.
	Progress func(*mcp.ProgressNotificationParams)
	// Log receives the server's notifications/message; nil: the client
	// takes none. They are logged to Options.Logger all the same.
	Log func(*mcp.LoggingMessageParams)
	// LogLevel is the least level of the messages Log takes ("" for
	// whatever the server sends). Before the call, a server that declares
	// logging is asked for messages from that level up, if it was asked
	// for fewer; it is not asked for fewer again.
	LogLevel mcp.LoggingLevel
}

// flight is one call in flight on a session, and who is in front of it.
type flight struct {
	ctx  context.Context
	peer *Peer // nil: no one
}

// fronts are the calls in flight on a session, by their number, and the
// progress tokens the session gave them.
type fronts struct {
	mu       sync.Mutex
	next     uint64
	flights  map[uint64]*flight
	progress map[string]*flight

	// handled counts the notifications of progress and log messages
	// handled, and read those read, over a transport that says
	// (counting: Stdio's): see settle.
	handled, read atomic.Uint64
	counting      bool

	// levelMu is held while the server is asked for a log level; level is
	// the one asked for ("" until then), logging whether the server
	// declared the capability.
	levelMu sync.Mutex
	level   mcp.LoggingLevel
	logging bool
}

// begin counts a call in flight, and gives it a progress token when its
// peer takes progress ("" otherwise). end ends it.
func (f *fronts) begin(ctx context.Context, peer *Peer) (token string, end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flights == nil {
		f.flights, f.progress = map[uint64]*flight{}, map[string]*flight{}
	}
	f.next++
	id := f.next
	fl := &flight{ctx: ctx, peer: peer}
	f.flights[id] = fl
	if peer != nil && peer.Progress != nil {
		token = "agenthost-" + strconv.FormatUint(id, 10)
		f.progress[token] = fl
	}
	return token, func() {
		f.mu.Lock()
		delete(f.flights, id)
		if token != "" {
			delete(f.progress, token)
		}
		f.mu.Unlock()
	}
}

// front returns the call in flight whose client is in front of every
// call in flight, the last begun, or why there is none.
func (f *fronts) front() (*flight, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last *flight
	var lastID uint64
	for id, fl := range f.flights {
		switch {
		case fl.peer == nil:
			return nil, "a call of a client that does not offer it is in flight"
		case last != nil && (fl.peer.Key == nil || fl.peer.Key != last.peer.Key):
			return nil, "calls of several clients are in flight, and the request does not say which it is for"
		}
		if last == nil || id > lastID {
			last, lastID = fl, id
		}
	}
	if last == nil {
		return nil, "no call is in flight"
	}
	return last, ""
}

// byToken returns the call the progress token was given to.
func (f *fronts) byToken(token any) *flight {
	s, ok := token.(string)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.progress[s]
}

// codeUnsupported is the code of the answer to a request that no client
// in front can answer: the MCP Go SDK's own for a client that offers no
// sampling. (The SDK would write its own words over those of an answer of
// code -32601, method not found.)
const codeUnsupported = -31001

// unsupported is the answer to a request of the server that no client in
// front can answer.
func unsupported(what, why string) error {
	return &jsonrpc.Error{Code: codeUnsupported, Message: fmt.Sprintf("%s is not supported here: %s", what, why)}
}

// during returns ctx, ended also when the call fl ends.
func during(ctx context.Context, fl *flight) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(fl.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// createMessage passes the server's sampling/createMessage to the client
// in front.
func (f *fronts) createMessage(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	fl, why := f.front()
	if fl != nil && fl.peer.CreateMessage == nil {
		fl, why = nil, "the client in front of the call does not offer it"
	}
	if fl == nil {
		return nil, unsupported("sampling", why)
	}
	ctx, stop := during(ctx, fl)
	defer stop()
	return fl.peer.CreateMessage(ctx, req.Params)
}

// elicit passes the server's elicitation/create to the client in front.
func (f *fronts) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	fl, why := f.front()
	if fl != nil && fl.peer.Elicit == nil {
		fl, why = nil, "the client in front of the call does not offer it"
	}
	if fl == nil {
		return nil, unsupported("elicitation", why)
	}
	ctx, stop := during(ctx, fl)
	defer stop()
	return fl.peer.Elicit(ctx, req.Params)
}

// settleQuiet and settleMax bound settle.
const (
	settleQuiet = 2 * time.Millisecond
	settleMax   = 50 * time.Millisecond
	settleRead  = 200 * time.Millisecond
)

// countReads has a stdio transport count the notifications of progress
// and log messages it reads (settle).
func (f *fronts) countReads(t mcp.Transport) {
	if st, ok := t.(*mcpstdio.Transport); ok && st.Seen == nil {
		st.Seen, f.counting = f.counted, true
	}
}

// counted is the Seen of a stdio transport: it counts the notifications
// of progress and log messages read.
func (f *fronts) counted(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && (req.Method == "notifications/message" || req.Method == "notifications/progress") {
		f.read.Add(1)
	}
}

// settle waits, after a call's answer, until the notifications the server
// sent before it have been handled: the SDK hands the answer to the call
// at once, and the notifications read before it to a goroutine that
// handles them in turn, so that the last ones could come after the call
// ended and miss its client. Over stdio, whose reads are counted, it
// waits until those read are handled (at most settleRead, for one the
// SDK would drop); over HTTP, until none is handled for settleQuiet, at
// most settleMax: a call whose client takes the server's log messages or
// progress is answered that much later.
func (f *fronts) settle() {
	if f.counting {
		deadline := time.Now().Add(settleRead)
		for want := f.read.Load(); f.handled.Load() < want && time.Now().Before(deadline); {
			runtime.Gosched()
			time.Sleep(100 * time.Microsecond)
		}
		return
	}
	deadline := time.Now().Add(settleMax)
	last := f.handled.Load()
	for time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(settleQuiet)
		n := f.handled.Load()
		if n == last {
			return
		}
		last = n
	}
}

// progressed passes the server's notifications/progress to the call its
// token was given to.
func (f *fronts) progressed(p *mcp.ProgressNotificationParams) {
	defer f.handled.Add(1)
	if p == nil {
		return
	}
	if fl := f.byToken(p.ProgressToken); fl != nil && fl.ctx.Err() == nil {
		fl.peer.Progress(p)
	}
}

// logged passes the server's notifications/message to the client in
// front, if it takes them.
func (f *fronts) logged(p *mcp.LoggingMessageParams) {
	defer f.handled.Add(1)
	if p == nil {
		return
	}
	if fl, _ := f.front(); fl != nil && fl.peer.Log != nil {
		fl.peer.Log(p)
	}
}

// levels are MCP's log levels, least first.
var levels = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}

// lowerLevel asks the server for messages from level up, when it
// declares logging and was asked for fewer. A refusal changes nothing.
func (s *Session) lowerLevel(ctx context.Context, level mcp.LoggingLevel) {
	f := &s.fronts
	want, ok := levels[level]
	if !ok {
		return
	}
	f.levelMu.Lock()
	defer f.levelMu.Unlock()
	if have, known := levels[f.level]; !f.logging || known && have <= want {
		return
	}
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err == nil {
		f.level = level
	}
}
