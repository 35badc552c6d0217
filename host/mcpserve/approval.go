package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// DefaultApprovalTimeout is the default of Options.ApprovalTimeout.
const DefaultApprovalTimeout = 5 * time.Minute

// The answers an approval's form offers (the "decision" property).
const (
	decisionAllow        = "allow"
	decisionAllowSession = "allow_session"
	decisionDeny         = "deny"
)

// Bounds of what an approval's message shows of a call: its preview is
// the model's text, of any length.
const (
	maxPreviewBytes = 3000
	maxPreviewLines = 60
	maxLineBytes    = 300
	maxReasonBytes  = 500
)

// approvals gives each tools/call the context the registry's
// interceptors read: whom the call is for (host.WithCaller), and the
// policy.Session that a policy.Guard asks (policy.WithSession).
//
// A session whose client declared the elicitation capability (form
// mode) keeps one policy.Session for its life, whose approver asks the
// client with an elicitation/create request: its "allow for this
// session" answers hold for that session alone, and are dropped when it
// closes. Every other call gets a policy.Session of its own with no
// approver, so a call that needs approval is denied with a text that
// names the rule that would allow it: the calls of a client that did
// not declare elicitation, and those of a session that cannot answer the
// server's requests. Those are, over HTTP, every request with
// Options.Stateless and those without a session ID; and a request of
// protocol 2026-07-28 or later on any transport, which the server may
// not send requests in (it would have to ask through the call's result,
// SEP-2322, which agenthost does not do). Without Options.Stateless, a
// client of an earlier version over HTTP keeps a session and is asked.
type approvals struct {
	timeout time.Duration

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*policy.Session
}

func newApprovals(timeout time.Duration) *approvals {
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	return &approvals{timeout: timeout, sessions: map[*mcp.ServerSession]*policy.Session{}}
}

// open is the number of sessions whose approvals are kept.
func (a *approvals) open() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// middleware gives every tools/call its caller and its policy.Session.
func (a *approvals) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && call.Session != nil {
			ctx = host.WithCaller(ctx, callerName(call.ClientInfo(), call.Session.ID()))
			ctx = policy.WithSession(ctx, a.session(ctx, call))
		}
		return next(ctx, method, req)
	}
}

// session returns the policy.Session of a call: its MCP session's, when
// its client can be asked, else a new one that cannot ask.
func (a *approvals) session(ctx context.Context, req *mcp.CallToolRequest) *policy.Session {
	ss := req.Session
	if ctx.Value(noServerRequests{}) != nil || req.ProtocolVersion() >= firstSessionless || !formElicitation(ss.InitializeParams()) {
		return policy.NewSession(nil)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[ss]
	if s == nil {
		s = policy.NewSession(&elicitApprover{ss: ss, timeout: a.timeout})
		a.sessions[ss] = s
		go func() {
			ss.Wait()
			a.mu.Lock()
			delete(a.sessions, ss)
			a.mu.Unlock()
		}()
	}
	return s
}

// formElicitation reports whether a client declared the elicitation
// capability with form mode: {} (before 2025-11-25, form alone) or one
// with "form".
func formElicitation(p *mcp.InitializeParams) bool {
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// elicitApprover asks an MCP session's client whether a call may run,
// with an elicitation/create request (form mode). The request goes with
// the tools/call's context: when the call ends (the client cancels it,
// the server shuts down) the request is cancelled
// (notifications/cancelled), and the guard denies the call. A client
// that gives no answer within timeout is denied too.
type elicitApprover struct {
	ss      *mcp.ServerSession
	timeout time.Duration
}

func (a *elicitApprover) Approve(ctx context.Context, req *policy.Request) (policy.Answer, error) {
	offerSession := len(req.SessionRules) > 0
	asking, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	res, err := a.ss.Elicit(asking, &mcp.ElicitParams{
		Mode:            "form",
		Message:         approvalMessage(req, offerSession),
		RequestedSchema: approvalSchema(offerSession),
	})
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(asking.Err(), context.DeadlineExceeded):
		return policy.Answer{}, fmt.Errorf("the client gave no answer within %s", a.timeout)
	case err != nil:
		return policy.Answer{}, errors.New(toolcall.Bound(err.Error(), maxReasonBytes))
	case res.Action != "accept":
		// decline, cancel, or what no version of MCP defines.
		return policy.Answer{Verdict: policy.Refuse}, nil
	}
	decision, _ := res.Content["decision"].(string)
	reason, _ := res.Content["reason"].(string)
	switch {
	case decision == decisionAllow:
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	case decision == decisionAllowSession && offerSession:
		return policy.Answer{Verdict: policy.AllowSession}, nil
	}
	return policy.Answer{Verdict: policy.Refuse, Reason: toolcall.Bound(reason, maxReasonBytes)}, nil
}

// approvalSchema is the form of an approval: a required choice, and a
// reason for a denial, which the model reads.
func approvalSchema(offerSession bool) map[string]any {
	values := []any{decisionAllow, decisionDeny}
	titles := []any{"Allow once", "Deny"}
	if offerSession {
		values = []any{decisionAllow, decisionAllowSession, decisionDeny}
		titles = []any{"Allow once", "Allow for this session", "Deny"}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{
				"type":        "string",
				"title":       "Decision",
				"description": "Whether the tool call may run",
				"enum":        values,
				"enumNames":   titles,
			},
			"reason": map[string]any{
				"type":        "string",
				"title":       "Reason",
				"description": "Why not (optional, for a denial): the model reads it",
			},
		},
		"required": []any{"decision"},
	}
}

// approvalMessage is the message of an approval: the tool, what asks,
// and what the call would do. The preview and the rules of the session
// are the model's text: they are shown as plain lines, each after "| ",
// their control, line-breaking and bidirectional characters escaped,
// bounded in length, so that they cannot pass for the server's words.
func approvalMessage(req *policy.Request, offerSession bool) string {
	var b strings.Builder
	call := req.Call
	fmt.Fprintf(&b, "Allow this tool call? agenthost asks before it runs (%s).\n\n", plainLine(req.Why, 200))
	fmt.Fprintf(&b, "Tool: %s", plainLine(call.Tool, toolcall.MaxName))
	switch {
	case strings.HasPrefix(call.Source, "mcp:"):
		fmt.Fprintf(&b, " (of the MCP server %s)", plainLine(strings.TrimPrefix(call.Source, "mcp:"), 100))
	case call.Source != "":
		fmt.Fprintf(&b, " (of the plugin %s)", plainLine(strings.TrimPrefix(call.Source, host.PluginPrefix), 100))
	}
	b.WriteString("\n\nWhat it would do, from the model's arguments (the lines after \"| \" are the model's text as given, not agenthost's words):\n")
	b.WriteString(plainBlock(req.Preview))
	if offerSession {
		b.WriteString("\n\"Allow for this session\" also lets later calls of this session that these rules match run without asking:\n")
		b.WriteString(plainBlock(strings.Join(req.SessionRules, "\n")))
	}
	return b.String()
}

// plainBlock shows text as lines each after "| ", plain (plainLine), at
// most maxPreviewLines lines and about maxPreviewBytes bytes in all.
func plainBlock(text string) string {
	text = strings.TrimRight(text, "\n")
	lines := strings.Split(text, "\n")
	var b strings.Builder
	for i, line := range lines {
		if i == maxPreviewLines || b.Len() >= maxPreviewBytes {
			fmt.Fprintf(&b, "[%d more lines not shown]\n", len(lines)-i)
			break
		}
		b.WriteString("| ")
		b.WriteString(plainLine(strings.TrimSuffix(line, "\r"), maxLineBytes))
		b.WriteByte('\n')
	}
	return b.String()
}

// plainLine shows s on one line (textsafe.Line), a tab as spaces, cut
// after max bytes.
func plainLine(s string, max int) string { return textsafe.Line(s, max, "    ") }

// callerName names an MCP client for the calls it makes (Call.Caller,
// the audit record): `mcp client "claude-code" 2.1 (session ab12cd34…)`.
// The name and version are the client's own claim, from its initialize
// request (or, from protocol 2026-07-28 on, the request's _meta).
func callerName(info *mcp.Implementation, sessionID string) string {
	var b strings.Builder
	b.WriteString("mcp client")
	if info != nil {
		if info.Name != "" {
			b.WriteString(" " + toolcall.Quote(info.Name))
		}
		if v := info.Version; v != "" {
			if plainVersion(v) {
				b.WriteString(" " + v)
			} else {
				b.WriteString(" " + toolcall.Quote(v))
			}
		}
	}
	if sessionID != "" {
		if len(sessionID) > 8 {
			sessionID = sessionID[:8] + "…"
		}
		b.WriteString(" (session " + plainLine(sessionID, 16) + ")")
	}
	return b.String()
}

// plainVersion reports whether a version can be shown unquoted: at most
// 32 letters, digits and .+-_ characters.
func plainVersion(v string) bool {
	if len(v) > 32 {
		return false
	}
	for _, r := range v {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune(".+-_", r)) {
			return false
		}
	}
	return true
}
