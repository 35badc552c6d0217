package mcpserve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/netutil"
)

// JSON-RPC error codes agenthost answers over HTTP besides the standard
// ones of the jsonrpc package.
const (
	// codeSessionNotFound answers a request whose Mcp-Session-Id names no
	// open session (HTTP 404), as the TypeScript SDK does.
	codeSessionNotFound = -32001
	// codeSessionLimit answers a new session, or a request without one,
	// over Options.MaxSessions, or while the server shuts down (HTTP 503).
	codeSessionLimit = -32000
)

// retryAfter is what a client refused for the limit of
// Options.MaxSessions is told to wait, in seconds.
const retryAfter = "30"

// sessionIDHeader is the streamable HTTP transport's session header.
const sessionIDHeader = "Mcp-Session-Id"

// shutdownTimeout bounds the shutdown of the HTTP server, once the calls
// in flight are done or canceled (drainTimeout).
const shutdownTimeout = 5 * time.Second

// The HTTP server's timeouts: a request's header and its body have
// headerTimeout and bodyTimeout to arrive; a connection idle between
// requests is closed after idleConnTimeout.
const (
	headerTimeout   = 10 * time.Second
	bodyTimeout     = 10 * time.Second
	idleConnTimeout = 2 * time.Minute
)

// Handler returns the server's streamable HTTP transport, at whatever
// path it is given: the Origin check, the bearer token
// (Options.Token), the cap of sessions and requests
// (Options.MaxSessions), sessions closed when idle (Options.SessionIdle)
// or none kept (Options.Stateless), JSON-RPC error bodies around the
// SDK's handlers, at most 32 messages in a JSON-RPC batch, and 10 s for a
// request's body to arrive. Every call of Handler returns the same
// handler.
//
// The server's own origins, which pass the Origin check beside
// Options.AllowOrigins, are those of the address each request's
// connection reached (http:// with its host and port, and the loopback
// names of a loopback host).
//
// The handler leaves the listener to its [http.Server]: [Server.Serve]
// adds timeouts for a request's header and a cap of the connections.
// Shut the server down with [Server.Shutdown], then the http.Server.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves the streamable HTTP transport on ln, at /mcp (and /), as
// agenthost mcp --http does, until ctx is canceled or the server is shut
// down, and returns nil then; it returns the listener's error if it
// fails first. What it serves there is what [Server.Handler] serves,
// except that the server's own origins are those of ln's address (every
// interface's address for an unspecified host, 0.0.0.0 or [::]).
//
// Once ctx is canceled: no new session, request without one or call is
// taken; the calls in flight get drainTimeout to finish, and are
// answered as they ended (a write that lands is never answered
// "canceled"); those left are canceled (a subscriptions/listen stream
// ends with its result); then, within shutdownTimeout, every session is
// closed, which ends its event streams and its goroutines, and the
// listener and the connections are closed. A request's context is not
// ctx's: a request ends as its call returns or its session closes, with
// what the SDK writes then.
//
// Bounds (see limits.go): a request's header and body have 10 s each
// to arrive, a JSON-RPC batch holds at most maxBatch messages, a session
// at most maxCallsPerSession calls in flight, and the server takes at
// most 4 x Options.MaxSessions + 16 connections at once (more wait to be
// accepted).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.rpc)
	mux.Handle("/{$}", s.rpc)
	srv := &http.Server{
		Handler:           checkOrigin(ownOrigins(ln.Addr()), s.opts.AllowOrigins, requireToken(s.opts.Token, mux)),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleConnTimeout,
	}

	// Connections beyond the limit wait in the kernel's queue, costing
	// the process nothing, until one closes.
	maxConns := 4*s.rpc.max + 16
	served := make(chan error, 1)
	go func() { served <- srv.Serve(netutil.LimitListener(ln, maxConns)) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		// No new session or request without one; the calls in flight
		// finish, within drainTimeout, and are answered as they ended.
		s.drain(context.Background(), context.Cause(ctx))
	case <-s.quit:
		<-s.drained
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	closed := s.closeSessions()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close() // which ends the requests left
	}
	select {
	case <-closed:
	case <-shutdown.Done():
	}
	return nil
}

// newRPCHandler is the HTTP side of a server with opts around the SDK's
// handlers: the limit of sessions and requests and JSON-RPC error
// bodies. Zero MaxSessions and SessionIdle in opts take the defaults.
//
// The SDK serves protocol versions from 2026-07-28 on, which have no
// sessions, only with a stateless handler, and the older ones with
// sessions only with a stateful one: each request goes to the handler of
// its version, so every version the SDK supports is served. With
// Stateless every request goes to the stateless handler.
func newRPCHandler(server *mcp.Server, opts *Options) *rpcHandler {
	maxSessions, idle := opts.MaxSessions, opts.SessionIdle
	if maxSessions == 0 {
		maxSessions = DefaultMaxSessions
	}
	if idle == 0 {
		idle = DefaultSessionIdle
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	// The SDK refuses a request that reached a loopback address with a
	// Host that is not a loopback name (DNS rebinding by Host); it is on
	// by default and stays on in both handlers.
	h := &rpcHandler{
		stateless: mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: true,
		}),
		server:   server,
		max:      maxSessions,
		sessions: map[*mcp.ServerSession]bool{},
	}
	if !opts.Stateless {
		h.stateful = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			PropagateRequestCancellation: true,
			SessionTimeout:               idle,
		})
	}
	return h
}

// requireToken answers 401 to a request without "Authorization: Bearer
// TOKEN". An empty token requires nothing.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin answers 403 to a request whose Origin header is neither one
// of the server's own nor allowed: a web page the user visits must not
// reach the server through the browser (DNS rebinding). A request without
// Origin does not come from a page, and passes. "*" in allowed allows
// every origin.
func checkOrigin(own, allowed []string, next http.Handler) http.Handler {
	ok := map[string]bool{}
	for _, o := range append(own, allowed...) {
		ok[o] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values("Origin")
		if len(values) == 0 || ok["*"] {
			next.ServeHTTP(w, r)
			return
		}
		o, valid := NormalOrigin(values[0])
		if len(values) > 1 || !valid || !ok[o] {
			http.Error(w, "forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkLocalOrigin is checkOrigin with the server's own origins those
// of the address each request's connection reached.
func checkLocalOrigin(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var own []string
		if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			own = ownOrigins(addr)
		}
		checkOrigin(own, allowed, next).ServeHTTP(w, r)
	})
}

// NormalOrigin returns an origin, scheme://host[:port], lower-cased and
// without the scheme's default port, as the Origin check compares them;
// ok is false for anything else ("null" included).
func NormalOrigin(s string) (origin string, ok bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// ownOrigins are the origins of a server listening at addr: http://
// with its host and port, the loopback names of a loopback host, and every
// interface's address for an unspecified host (0.0.0.0, [::]).
func ownOrigins(addr net.Addr) []string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	hosts := []string{host}
	ip := net.ParseIP(host)
	switch {
	case ip == nil && strings.EqualFold(host, "localhost"), ip != nil && ip.IsLoopback():
		hosts = append(hosts, "localhost", "127.0.0.1", "::1")
	case ip != nil && ip.IsUnspecified():
		hosts = append(hosts, "localhost", "127.0.0.1", "::1")
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					hosts = append(hosts, n.IP.String())
				}
			}
		}
	}
	var origins []string
	for _, h := range hosts {
		if o, ok := NormalOrigin("http://" + net.JoinHostPort(h, port)); ok {
			origins = append(origins, o)
		}
	}
	return origins
}

// rpcHandler wraps the SDK's streamable HTTP handlers: it answers in
// JSON-RPC what the SDK answers in plain text, sends a request of protocol
// 2026-07-28 or later to the stateless handler and the rest to the
// stateful one, refuses a request without a session that is not an
// initialize, and holds the sessions open plus the requests in flight in
// the stateless handler to max. Without a stateful handler (Stateless),
// every request goes to the stateless one.
//
// The stateless handler serves each request in a session of its own, the
// SDK's, for as long as the request runs (a subscriptions/listen stream,
// until it ends): it costs what a session costs while it runs.
type rpcHandler struct {
	stateful  http.Handler // nil with Stateless
	stateless http.Handler
	server    *mcp.Server
	max       int
	gate      *callGate // counts the POSTs under way; nil for none

	// requests are the stateless requests under way, by the value of
	// their requestHeader (see tie); lastRequest numbers them.
	requests    sync.Map // string → context.Context
	lastRequest atomic.Uint64

	mu       sync.Mutex
	open     int                         // sessions open or being initialized, and stateless requests in flight
	sessions map[*mcp.ServerSession]bool // the sessions open
	closing  bool                        // the server is shutting down
}

func (h *rpcHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tw := &textErrors{ResponseWriter: w}
	defer tw.finish()
	// Only tie says which request a message came in.
	r.Header.Del(requestHeader)
	if r.Method != http.MethodPost {
		if h.stateful == nil {
			h.stateless.ServeHTTP(tw, r)
			return
		}
		h.stateful.ServeHTTP(tw, r)
		return
	}
	if h.gate != nil {
		h.gate.hold()
		defer h.gate.release()
	}
	// A body that trickles in holds a connection and a goroutine: it has
	// bodyTimeout to arrive whole.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	if err == nil {
		// Past it, a body that did not arrive leaves the deadline
		// behind, so that the connection closes with the answer.
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooBig):
			writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit))
		case errors.As(err, &netErr) && netErr.Timeout():
			w.Header().Set("Connection", "close")
			writeRPCError(w, http.StatusRequestTimeout, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the request body did not arrive within %s", bodyTimeout))
		default:
			writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "failed to read the body")
		}
		return
	}
	msgs, raws, status, code, msg := parseBody(body)
	if code != 0 {
		writeRPCError(w, status, jsonrpc.ID{}, code, msg)
		return
	}
	if len(msgs) > maxBatch {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: a batch of %d messages; at most %d in one request", len(msgs), maxBatch))
		return
	}
	tw.id = singleCallID(msgs)
	// JSON-RPC answers no notification, and a server ignores one it does
	// not know; the streamable HTTP transport answers a POST of accepted
	// notifications 202 with no body. The SDK refuses (400) a notification
	// of a method it does not receive as one: those, once found well
	// formed, are taken out of a batch with other messages, and a body of
	// nothing else goes to the SDK as it is, for its checks of the request
	// (session, headers, protocol version, batching), which end in the
	// refusal of the first message that textErrors turns into 202.
	for i, m := range msgs {
		if !unknownNotification(m) {
			continue
		}
		if why := malformedNotification(raws[i]); why != "" {
			writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, why)
			return
		}
	}
	switch keptMsgs, keptRaws := withoutUnknown(msgs, raws); {
	case len(keptMsgs) == 0:
		tw.ignored = true
	case len(keptMsgs) < len(msgs):
		// A batch of the rest, as the SDK allows batches only in early
		// protocol versions.
		msgs = keptMsgs
		body, _ = json.Marshal(keptRaws)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	switch {
	case h.stateful == nil, sessionless(r, msgs):
		if !h.acquire(tw) {
			return
		}
		defer h.release()
		defer h.tie(r)()
		h.stateless.ServeHTTP(tw, r)
	case r.Header.Get(sessionIDHeader) != "":
		h.stateful.ServeHTTP(tw, r)
	case hasInitialize(msgs):
		h.initialize(tw, r)
	default:
		writeRPCError(w, http.StatusBadRequest, tw.id, jsonrpc.CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required")
	}
}

// requestHeader is set on a stateless request by tie, and only by tie
// (a client's is removed), for cancelWithRequest to find the request a
// message came in.
const requestHeader = "Agenthost-Stateless-Request"

// tie numbers a request that the stateless handler serves, in its
// requestHeader, so that cancelWithRequest ends what it runs when the
// request's context ends. The function it returns forgets the request.
//
// The SDK ties the calls of protocol 2026-07-28 and later to their
// request; an older one, stateless, would run to its end after its client
// went away, since the notifications/cancelled that the client may send
// comes in a request of its own, which names no session and may reach
// another replica.
func (h *rpcHandler) tie(r *http.Request) (forget func()) {
	id := strconv.FormatUint(h.lastRequest.Add(1), 10)
	r.Header.Set(requestHeader, id)
	h.requests.Store(id, r.Context())
	return func() { h.requests.Delete(id) }
}

// errClientGone is the cause of the cancellation of a stateless
// request's call whose client closed the request (its connection, or the
// stream of the response).
var errClientGone = errors.New("the client closed the request")

// cancelWithRequest is the middleware that cancels what a stateless
// request runs, its tools/call, when its HTTP request's context ends:
// the client closed the connection or the response's stream.
func (h *rpcHandler) cancelWithRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		extra := req.GetExtra()
		if extra == nil || extra.Header == nil {
			return next(ctx, method, req)
		}
		id := extra.Header.Get(requestHeader)
		if id == "" {
			return next(ctx, method, req)
		}
		v, ok := h.requests.Load(id)
		if !ok {
			return next(ctx, method, req)
		}
		httpCtx := v.(context.Context)
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(httpCtx, func() { cancel(errClientGone) })()
		return next(ctx, method, req)
	}
}

// initialize serves an initialize without a session, the start of a new
// session, when the number of sessions allows.
func (h *rpcHandler) initialize(tw *textErrors, r *http.Request) {
	if !h.acquire(tw) {
		return
	}
	h.stateful.ServeHTTP(tw, r)
	if id := tw.Header().Get(sessionIDHeader); id != "" {
		for ss := range h.server.Sessions() {
			if ss.ID() == id {
				h.opened(ss)
				return
			}
		}
	}
	h.release() // no session, or it closed already
}

// opened holds a new session, its place in open taken, until it closes;
// one that opens as the server shuts down is closed.
func (h *rpcHandler) opened(ss *mcp.ServerSession) {
	h.mu.Lock()
	closing := h.closing
	h.sessions[ss] = true
	h.mu.Unlock()
	go func() {
		ss.Wait()
		h.mu.Lock()
		delete(h.sessions, ss)
		h.mu.Unlock()
		h.release()
	}()
	if closing {
		ss.Close()
	}
}

// acquire counts a new session, or a stateless request, in open, or
// answers 503 (with Retry-After) and returns false: over max, or while the
// server shuts down.
func (h *rpcHandler) acquire(tw *textErrors) bool {
	h.mu.Lock()
	closing, full := h.closing, h.open >= h.max
	if !closing && !full {
		h.open++
	}
	h.mu.Unlock()
	if !closing && !full {
		return true
	}
	msg := fmt.Sprintf("server is at its limit of %d sessions and requests in flight; retry later", h.max)
	if closing {
		msg = "server is shutting down; retry later"
	}
	tw.Header().Set("Retry-After", retryAfter)
	writeRPCError(tw.ResponseWriter, http.StatusServiceUnavailable, tw.id, codeSessionLimit, msg)
	return false
}

// closeSessions takes no new session or stateless request from now on,
// and closes every session open: its event streams end and its goroutines
// exit. The channel is closed once they all are closed. A session whose
// initialize is under way closes as it opens.
//
// A stateless request's session, the SDK's, is left to close as the
// request ends, once its call returns: the SDK would write no response in
// a session closing, not even the result of a subscriptions/listen that
// tells its client the stream ended on purpose.
func (h *rpcHandler) closeSessions() <-chan struct{} {
	h.stopTaking()
	h.mu.Lock()
	open := slices.Collect(maps.Keys(h.sessions))
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range open {
		wg.Go(func() { ss.Close() })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// stopTaking takes no new session or stateless request from now on.
func (h *rpcHandler) stopTaking() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
}

func (h *rpcHandler) release() {
	h.mu.Lock()
	h.open--
	h.mu.Unlock()
}

// parseBody decodes a POST body: one JSON-RPC message or a batch, each
// message with its JSON. A nonzero code says why it is not one, with the
// HTTP status to answer.
func parseBody(body []byte) (msgs []jsonrpc.Message, raws []json.RawMessage, status int, code int64, msg string) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, nil, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error"
	}
	raws = []json.RawMessage{body}
	if body[0] == '[' {
		// Into a new slice: unmarshaled into raws, the first message would
		// be copied over body.
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil || len(batch) == 0 {
			return nil, nil, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch"
		}
		raws = batch
	}
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, nil, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message"
		}
		msgs = append(msgs, m)
	}
	return msgs, raws, 0, 0, ""
}

// sdkNotifications are the notifications the SDK's server receives (its
// serverMethodInfos, in mcp/server.go). The SDK refuses a message without
// an id of any other method, a request's included.
var sdkNotifications = map[string]bool{
	"notifications/cancelled":          true,
	"notifications/initialized":        true,
	"notifications/progress":           true,
	"notifications/roots/list_changed": true,
}

// unknownNotification reports whether m is a notification the SDK does
// not receive: one the server ignores.
func unknownNotification(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	return ok && !req.IsCall() && !sdkNotifications[req.Method]
}

// malformedNotification says why raw, a message the jsonrpc package
// decodes as a notification, is not a well-formed one, or returns "": it
// has no id (MCP allows no null id), no result or error, a method, and
// params, if any, that are an object (or null, which the SDK takes for
// none).
func malformedNotification(raw json.RawMessage) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return "Invalid Request: not a JSON-RPC 2.0 message"
	}
	if _, ok := members["id"]; ok {
		return "Invalid Request: an id must be a string or an integer"
	}
	var method string
	_, result := members["result"]
	_, failure := members["error"]
	if result || failure || json.Unmarshal(members["method"], &method) != nil || method == "" {
		return "Invalid Request: not a JSON-RPC 2.0 message"
	}
	if params, ok := members["params"]; ok && params[0] != '{' && string(params) != "null" {
		return "Invalid Request: params must be an object"
	}
	return ""
}

// withoutUnknown returns msgs, and raws (their JSON), without the unknown
// notifications.
func withoutUnknown(msgs []jsonrpc.Message, raws []json.RawMessage) ([]jsonrpc.Message, []json.RawMessage) {
	var keptMsgs []jsonrpc.Message
	var keptRaws []json.RawMessage
	for i, m := range msgs {
		if !unknownNotification(m) {
			keptMsgs = append(keptMsgs, m)
			keptRaws = append(keptRaws, raws[i])
		}
	}
	return keptMsgs, keptRaws
}

// singleCallID is the id of the one call in msgs, or the null id.
func singleCallID(msgs []jsonrpc.Message) jsonrpc.ID {
	if len(msgs) == 1 {
		if req, ok := msgs[0].(*jsonrpc.Request); ok {
			return req.ID
		}
	}
	return jsonrpc.ID{}
}

// sessionless reports whether a POST is one of the protocol's requests
// without a session, which the SDK serves only statelessly: a version from
// 2026-07-28 on in the Mcp-Protocol-Version header or a request's _meta,
// or server/discover outside a session. The SDK's stateful handler
// refuses the first two and leaves those versions out of the third's
// answer.
func sessionless(r *http.Request, msgs []jsonrpc.Message) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= firstSessionless {
		return true
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			if hasMetaVersion(req.Params) || (req.Method == "server/discover" && r.Header.Get(sessionIDHeader) == "") {
				return true
			}
		}
	}
	return false
}

// firstSessionless is the first protocol version without sessions
// (SEP-2575).
const firstSessionless = "2026-07-28"

// hasInitialize reports whether msgs hold an initialize request (with an
// id: without one, it is an unknown notification).
func hasInitialize(msgs []jsonrpc.Message) bool {
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "initialize" {
			return true
		}
	}
	return false
}

// hasMetaVersion reports whether params carry the per-request protocol
// version of SEP-2575.
func hasMetaVersion(params json.RawMessage) bool {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	_, ok := p.Meta[mcp.MetaKeyProtocolVersion]
	return ok
}

// writeRPCError answers a JSON-RPC error response; a zero id is written
// as null, as JSON-RPC wants for a request whose id is unknown.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	type rpcError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	data, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", id.Raw(), rpcError{code, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// textErrors turns the SDK's plain-text error responses into JSON-RPC
// error responses with the same status: 404 (no such session) into
// codeSessionNotFound, a method the server does not have into
// CodeMethodNotFound, the rest into CodeInvalidRequest. For a body of
// unknown notifications only, the SDK's refusal of their methods is 202
// with no body instead: they are accepted, and ignored.
type textErrors struct {
	http.ResponseWriter
	id      jsonrpc.ID // the request's id, when it is one call
	ignored bool       // the body holds unknown notifications only

	status int
	text   bytes.Buffer
}

func (w *textErrors) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return
	}
	w.status = -1
	w.ResponseWriter.WriteHeader(status)
}

func (w *textErrors) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status > 0 {
		return w.text.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *textErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the JSON-RPC error for a plain-text one held back.
func (w *textErrors) finish() {
	if w.status <= 0 {
		return
	}
	msg := strings.TrimSpace(w.text.String())
	if w.ignored && w.status == http.StatusBadRequest && refusesMethod(msg) {
		h := w.Header()
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		w.ResponseWriter.WriteHeader(http.StatusAccepted)
		return
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	switch {
	case w.status == http.StatusNotFound:
		code, msg = codeSessionNotFound, "Session not found"
	case strings.HasPrefix(msg, "JSON RPC not handled"):
		// The SDK refuses a method it does not have before the session
		// sees it; JSON-RPC's code for that is "method not found".
		code = jsonrpc.CodeMethodNotFound
		msg = "Method not found: " + strings.TrimPrefix(msg, "JSON RPC not handled: ")
	}
	writeRPCError(w.ResponseWriter, w.status, w.id, code, msg)
}

// refusesMethod reports whether msg is the SDK's refusal of a message for
// its method: one it does not receive ("JSON RPC not handled: \"m\"
// unsupported"), or a request's without an id ("invalid request: missing
// id for \"m\""). The SDK checks each message's method only after the
// request itself (session, headers, protocol version, batching).
func refusesMethod(msg string) bool {
	return strings.HasPrefix(msg, "JSON RPC not handled: ") || strings.HasPrefix(msg, "invalid request: missing id for ")
}

// Interface guard.
var _ http.Handler = (*rpcHandler)(nil)
