package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is the version the client asks for. It is the newest
// one negotiated with initialize; the SDK's newer default first tries a
// server/discover request that today's servers do not know, and a server
// that ignores an unknown request would stall the handshake until its
// deadline.
const protocolVersion = "2025-11-25"

// The bounds of a tool list, when Options sets none.
const (
	maxPages     = 1000
	maxTools     = 10000
	maxListBytes = 64 << 20
)

// defaultMaxResult is Options.MaxResult's zero value: 64 MiB.
const defaultMaxResult = 64 << 20

// objectSchema is the input schema of a tool whose server sent none.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// Tool is one tool an MCP server lists.
type Tool struct {
	// Name, Title and Description are as the server sent them. Title is
	// the tool's title, or its annotations' title when it has none.
	Name, Title, Description string
	// InputSchema is the schema the server sent (re-encoded: object keys
	// sorted, numbers as JSON numbers); {"type":"object"} when it sent none.
	// It is not checked here: it may be any JSON value.
	InputSchema json.RawMessage
	// ReadOnly, Destructive, Idempotent and OpenWorld are MCP's hints,
	// with MCP's defaults applied where the server sent none: readOnly
	// false, destructive true, idempotent false, openWorld true. They are
	// the server's claims, not facts.
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	// OutputSchema is the schema of the tool's structured results as the
	// server sent it (re-encoded), or nil when it sent none. It is not
	// checked here.
	OutputSchema json.RawMessage
}

// Options configures a session.
type Options struct {
	// Name and Version are the client's implementation info, sent in the
	// handshake: "agenthost" and the host's version. An empty Name is sent
	// as "agenthost".
	Name, Version string

	// Logger receives the server's notifications/message, each at the
	// hclog level that matches the server's (debug; info and notice;
	// warning; error and worse), with the server's logger name as the
	// field "logger". Data that is not a string is logged as its JSON; a
	// message is cut to 16 KiB. If the server declares the logging
	// capability, the handshake asks it for messages at Logger's level and
	// above ("emergency" only, for a nil or silent Logger), so that a
	// chatty server does not send what would be dropped. Nil discards the
	// messages.
	Logger hclog.Logger

	// OnToolsChanged is called when the server sends
	// notifications/tools/list_changed. It runs on the goroutine that
	// delivers the server's notifications, one at a time: it may call the
	// session's methods, but other notifications wait until it returns.
	// Nil ignores the notification.
	OnToolsChanged func()

	// OnPromptsChanged and OnResourcesChanged are called when the server
	// sends notifications/prompts/list_changed or
	// notifications/resources/list_changed, and OnResourceUpdated with
	// the URI of its notifications/resources/updated, as OnToolsChanged
	// is called. Nil ignores the notification.
	OnPromptsChanged   func()
	OnResourcesChanged func()
	OnResourceUpdated  func(uri string)

	// Sampling and Elicitation declare the client's capabilities of those
	// names (elicitation in form mode): the server's requests go to the
	// client in front of the calls in flight (see Peer), and are answered
	// "not supported" when there is none that offers them.
	Sampling, Elicitation bool

	// MaxResult bounds the text of one call's result, in bytes: a larger
	// result is an error saying so. Zero means 64 MiB. It bounds too the
	// text and data of the content blocks of a result (Result.Content)
	// with its text.
	MaxResult int

	// MaxTools and MaxListBytes bound a list of tools (Tools): how many,
	// and the bytes of their names, titles, descriptions and schemas. A
	// page that takes the list past either ends it with an error, so
	// that no more pages are asked for, nor kept. Zero means 10,000 tools
	// and 64 MiB.
	MaxTools     int
	MaxListBytes int

	// Roots, when not nil, declares the roots capability (with
	// listChanged) and offers these directories, absolute paths, as the
	// roots the server may work in: it asks for them with roots/list and
	// gets them as file:// URIs. SetRoots changes them. Nil declares no
	// roots. A call made as the session begins waits for the server to
	// take them: until 50 ms after its first roots/list was answered,
	// or, if it has not asked, until 200 ms after the session began.
	Roots []string
}

// Session is a connection to one MCP server, initialized and ready for
// calls. Its methods may be called concurrently.
type Session struct {
	cs        *mcp.ClientSession
	t         mcp.Transport
	maxResult int
	maxTools  int
	maxBytes  int
	done      chan struct{}
	// fronts are the calls in flight and who is in front of them (Peer).
	fronts fronts
	// roots are the roots offered to the server (Options.Roots).
	roots roots
	// life ends when Close is called, and with it every request under
	// way: the SDK's own Close would wait for them.
	life context.Context
	end  context.CancelFunc
}

// Connect initializes a session over t. ctx bounds the handshake
// (initialize, and logging/setLevel when the server declares logging);
// it does not bound the session, which lasts until Close or until the
// server goes away.
func Connect(ctx context.Context, t mcp.Transport, opts Options) (*Session, error) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	name := opts.Name
	if name == "" {
		name = "agenthost"
	}
	onToolsChanged := opts.OnToolsChanged
	s := &Session{t: t, maxResult: opts.MaxResult, maxTools: opts.MaxTools, maxBytes: opts.MaxListBytes, done: make(chan struct{})}
	clientOpts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if onToolsChanged != nil {
				onToolsChanged()
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logMessage(logger, req.Params)
			s.fronts.logged(req.Params)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.fronts.progressed(req.Params)
		},
	}
	s.watch(clientOpts, opts)
	s.fronts.countReads(t)
	declareRoots(clientOpts, opts)
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: opts.Version}, clientOpts)
	s.receive(client, opts)
	s.roots.offer(client, opts)
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, describe(ctx, t, nil, "the handshake with the server failed", err)
	}
	s.cs = cs
	s.roots.begin()
	s.life, s.end = context.WithCancel(context.WithoutCancel(ctx))
	if s.maxResult <= 0 {
		s.maxResult = defaultMaxResult
	}
	if s.maxTools <= 0 {
		s.maxTools = maxTools
	}
	if s.maxBytes <= 0 {
		s.maxBytes = maxListBytes
	}
	go func() {
		_ = cs.Wait()
		close(s.done)
	}()
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
		level := wantedLevel(logger)
		s.fronts.logging, s.fronts.level = true, level
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			if ctx.Err() != nil || closedConnection(err) {
				s.Close()
				return nil, describe(ctx, t, s.done, "the handshake with the server failed", err)
			}
			// A server that declares logging but refuses the level only
			// sends more, or less, than asked for; the session is fine.
			logger.Debug("the MCP server refused a log level", "level", string(level), "error", describe(ctx, t, s.done, "", err).Error())
		}
	}
	return s, nil
}

// Tools lists the server's tools, every page of them. A list of more than
// Options.MaxTools tools or Options.MaxListBytes bytes, of more than
// 1,000 pages, or whose pages repeat a cursor is an error, as soon as the
// page that shows it arrives.
func (s *Session) Tools(ctx context.Context) ([]Tool, error) {
	var tools []Tool
	size := 0
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	ctx, stop := s.bind(ctx)
	defer stop()
	for page := 1; ; page++ {
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return nil, describe(ctx, s.t, s.done, "listing the tools failed", err)
		}
		if len(tools)+len(res.Tools) > s.maxTools {
			return nil, fmt.Errorf("listing the tools failed: the server lists more than %d tools", s.maxTools)
		}
		for _, t := range res.Tools {
			tool := toolFrom(t)
			size += len(tool.Name) + len(tool.Title) + len(tool.Description) + len(tool.InputSchema) + len(tool.OutputSchema)
			if size > s.maxBytes {
				return nil, fmt.Errorf("listing the tools failed: the server's tools take more than %d bytes (names, descriptions and schemas), by page %d", s.maxBytes, page)
			}
			tools = append(tools, tool)
		}
		next := res.NextCursor
		if next == "" {
			return tools, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("listing the tools failed: the server sent page %d's cursor before, so its list would never end", page)
		}
		if page == maxPages {
			return nil, fmt.Errorf("listing the tools failed: the server's list goes on past %d pages", maxPages)
		}
		seen[next] = true
		params = &mcp.ListToolsParams{Cursor: next}
	}
}

// toolFrom converts a tool as the SDK decoded it.
func toolFrom(t *mcp.Tool) Tool {
	out := Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: objectSchema,
		Destructive: true,
		OpenWorld:   true,
	}
	if a := t.Annotations; a != nil {
		if out.Title == "" {
			out.Title = a.Title
		}
		out.ReadOnly = a.ReadOnlyHint
		out.Idempotent = a.IdempotentHint
		if a.DestructiveHint != nil {
			out.Destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			out.OpenWorld = *a.OpenWorldHint
		}
	}
	// A value decoded from JSON always encodes again.
	if t.InputSchema != nil {
		if schema, err := json.Marshal(t.InputSchema); err == nil {
			out.InputSchema = schema
		}
	}
	if t.OutputSchema != nil {
		if schema, err := json.Marshal(t.OutputSchema); err == nil {
			out.OutputSchema = schema
		}
	}
	return out
}

// Call calls the tool name with args, a JSON object (nil or empty means
// {}), and returns the result's text (see the package doc) and its
// isError. When ctx ends first, Call returns at once with ctx's error and
// the server is told with notifications/cancelled.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (text string, isError bool, err error) {
	res, err := s.CallResult(ctx, name, args)
	return res.Text, res.IsError, err
}

// Result is a tool's result.
type Result struct {
	// Text is the result's text (see the package doc).
	Text string
	// IsError is the result's isError: the tool failed.
	IsError bool
	// Structured is the result's structuredContent as the server sent it
	// (re-encoded), or nil when it sent none. It is not checked here.
	Structured json.RawMessage
	// Content is the result's content blocks as the server sent them
	// (images, audio, resource links, embedded resources, text), for
	// those who take more than Text; nil when Text says all of it: no
	// content, or one text block without annotations or _meta.
	Content []mcp.Content
}

// CallResult is Call, returning the result's structured content too.
// The text and the structured content together are bounded by
// Options.MaxResult.
func (s *Session) CallResult(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	return s.CallFor(ctx, name, args, nil)
}

// CallFor is CallResult for a call that peer is in front of (see Peer;
// nil for none): what the server asks or says during the call goes to
// it.
func (s *Session) CallFor(ctx context.Context, name string, args json.RawMessage, peer *Peer) (Result, error) {
	s.roots.settle(ctx)
	var arguments any = map[string]any{}
	if len(args) > 0 {
		if !isObject(args) {
			return Result{}, errors.New("the arguments are not a JSON object")
		}
		arguments = args
	}
	ctx, stop := s.bind(ctx)
	defer stop()
	params := &mcp.CallToolParams{Name: name, Arguments: arguments}
	token, end := s.fronts.begin(ctx, peer)
	defer end()
	if token != "" {
		params.SetProgressToken(token)
	}
	if peer != nil && peer.Log != nil && peer.LogLevel != "" {
		s.lowerLevel(ctx, peer.LogLevel)
	}
	res, err := s.cs.CallTool(ctx, params)
	if peer != nil && (peer.Log != nil && s.fronts.logging || peer.Progress != nil) {
		s.fronts.settle()
	}
	if err != nil {
		return Result{}, describe(ctx, s.t, s.done, "", err)
	}
	text, err := resultText(res, s.maxResult)
	if err != nil {
		return Result{}, err
	}
	parts, err := resultParts(res, text, s.maxResult)
	if err != nil {
		return Result{}, err
	}
	out := Result{Text: text, IsError: res.IsError, Content: parts}
	if res.StructuredContent != nil && !res.IsError {
		structured, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return Result{}, fmt.Errorf("the server's structured content could not be encoded: %v", err)
		}
		if size := len(text) + len(structured); size > s.maxResult {
			return Result{}, tooLarge(size, s.maxResult)
		}
		out.Structured = structured
	}
	return out, nil
}

// isObject reports whether raw is one valid JSON object. It is on every
// call's path, so it checks without decoding.
func isObject(raw json.RawMessage) bool {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(raw)
}

// Ping checks that the server answers.
func (s *Session) Ping(ctx context.Context) error {
	ctx, stop := s.bind(ctx)
	defer stop()
	if err := s.cs.Ping(ctx, nil); err != nil {
		return describe(ctx, s.t, s.done, "the ping failed", err)
	}
	return nil
}

// bind returns ctx ended also by Close, with errClosed as its cause, and
// the function that releases it.
func (s *Session) bind(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.life, func() { cancel(errClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// Close ends the session: calls under way return an error, and the
// transport is closed (for stdio, the server's stdin and stdout; the
// process is the caller's to stop). Close may be called more than once.
func (s *Session) Close() error {
	ended := false
	select {
	case <-s.done:
		ended = true
	default:
	}
	s.end()
	err := s.cs.Close()
	<-s.done
	// Closing the ends of a session that had ended, or files that are
	// closed already, reports nothing of use.
	if err == nil || ended || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return fmt.Errorf("closing the session: %w", err)
}

// Done is closed when the session has ended: the server closed the
// connection or exited, the pipe or stream broke, or Close was called.
func (s *Session) Done() <-chan struct{} {
	return s.done
}

// Server returns the server's name and version as it gave them in the
// handshake, and the protocol version agreed on.
func (s *Session) Server() (name, version, protocol string) {
	res := s.cs.InitializeResult()
	if res == nil {
		return "", "", ""
	}
	if res.ServerInfo != nil {
		name, version = res.ServerInfo.Name, res.ServerInfo.Version
	}
	return name, version, res.ProtocolVersion
}
