package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host/llm"
)

// Compactor makes a conversation smaller, so that the model's request fits
// its context window. The agent calls it before a request whose estimate
// is over the budget (see Options.CompactAt), and from Compact; the
// conversation it returns replaces the agent's. It must keep the
// conversation valid: every assistant tool call followed by its results,
// roles alternating, the latest user message last or followed by the
// model's work on it.
//
// The default, DefaultCompactor{}, elides the older tool results, then
// summarizes the older turns with the model.
type Compactor interface {
	Compact(ctx context.Context, req CompactRequest) ([]llm.Message, error)
}

// CompactorFunc is a function that is a [Compactor].
type CompactorFunc func(ctx context.Context, req CompactRequest) ([]llm.Message, error)

// Compact calls f.
func (f CompactorFunc) Compact(ctx context.Context, req CompactRequest) ([]llm.Message, error) {
	return f(ctx, req)
}

// CompactRequest is what a [Compactor] is asked to compact, with what it
// needs to do it.
type CompactRequest struct {
	// Model is the model the conversation is for.
	Model string
	// System is the request's system prompt (it is not compacted).
	System string
	// Messages are the conversation, a copy: the compactor may change the
	// slice, but not what its messages share with the agent's (the
	// ToolCalls, Thinking and Images slices).
	Messages []llm.Message
	// Budget is the tokens the whole request (system prompt and tools
	// included) may take; Window is the model's context window.
	Budget, Window int
	// Force is set by Agent.Compact: compact as far as the compactor
	// goes, though the conversation may fit already.
	Force bool
	// Tokens estimates one message's tokens, and Count the request's with
	// msgs as its conversation; both corrected by what the provider
	// counted so far. Nil: uncorrected estimates (EstimateTokens).
	Tokens func(m llm.Message) int
	Count  func(msgs []llm.Message) int
	// Provider is the agent's provider, to summarize with; the tokens of
	// its calls are added to the agent's usage.
	Provider llm.Provider
	// Report, when not nil, takes a line saying what the compactor did,
	// for the EventCompacted of the compaction.
	Report func(what string)
}

func (r *CompactRequest) tokens(m llm.Message) int {
	if r.Tokens != nil {
		return r.Tokens(m)
	}
	return messageTokens(&m)
}

func (r *CompactRequest) count(msgs []llm.Message) int {
	if r.Count != nil {
		return r.Count(msgs)
	}
	return fixedTokens(r.System, nil) + messagesTokens(msgs)
}

func (r *CompactRequest) report(format string, args ...any) {
	if r.Report != nil {
		r.Report(fmt.Sprintf(format, args...))
	}
}

// The defaults of a [DefaultCompactor].
const (
	DefaultKeepToolTurns = 3
	DefaultKeepShare     = 0.4
)

// DefaultCompactor is the default [Compactor]. It works in steps and
// stops when the request fits (unless forced):
//
//  1. It replaces every tool result but those of the latest KeepToolTurns
//     assistant messages that called tools by a placeholder that says what
//     was elided and how to get it again (ElidedResult), when that is
//     shorter.
//  2. It chooses the turns to keep verbatim: from the first user message
//     after which they fit in KeepShare of the budget with a summary, or
//     at least the latest user turn. When even those do not fit the
//     budget, it elides their largest tool results too, until they do.
//  3. It summarizes the turns before with the model (a Chat request to
//     the provider, without tools, over those messages rendered as text,
//     in several requests each extending the summary when they do not fit
//     one), and puts the summary (SummaryMessage) at the head of the first
//     user message kept. It cuts only before a user message, so that every
//     tool call keeps its results and the roles alternate. It calls no
//     model when the turns kept would not fit with the summary anyway.
//
// Forced (Agent.Compact), it elides the older tool results, then
// summarizes all but the latest user turn.
type DefaultCompactor struct {
	// KeepToolTurns is how many of the latest tool-calling assistant
	// messages keep their results; 0 means DefaultKeepToolTurns, below 0
	// none.
	KeepToolTurns int
	// KeepShare is the share of the budget the turns kept verbatim may
	// take after a summary; 0 means DefaultKeepShare.
	KeepShare float64
	// SummaryTokens bounds the summary's length; 0 means an eighth of the
	// budget, between 256 and 4,096 tokens.
	SummaryTokens int
}

// elidedPrefix starts the placeholder of an elided tool result.
const elidedPrefix = "[elided to fit the context window: "

// ElidedResult is the placeholder of a tool result of tokens tokens
// elided from the conversation: for a call of read_file with arguments
// {"path":"x"},
//
//	[elided to fit the context window: the result of read_file {"path":"x"} (12,345 tokens); call the tool again if you need it]
//
// ("the error result of" for a failure; arguments longer than 200 bytes
// are cut). An empty name is "a tool call".
func ElidedResult(name string, args json.RawMessage, tokens int, isError bool) string {
	what := "the result of "
	if isError {
		what = "the error result of "
	}
	call := "a tool call"
	if name != "" {
		call = name
		if a := shortArgs(args); a != "" {
			call += " " + a
		}
	}
	return elidedPrefix + what + call + " (" + thousands(tokens) + " tokens); call the tool again if you need it]"
}

func shortArgs(args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		b.Reset()
		b.Write(args)
	}
	s := b.String()
	const limit = 200
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// The framing of a summary in the conversation.
const (
	summaryHeader = "[Summary of the earlier conversation, which was compacted to fit the context window. The messages it replaces are gone: fetch again what you need of their tool results.]"
	summaryFooter = "[End of the summary. The conversation continues.]"
)

// SummaryMessage is the text that stands for the earlier conversation
// summarized as summary, at the head of the first user message kept:
//
//	[Summary of the earlier conversation, which was compacted to fit the context window. The messages it replaces are gone: fetch again what you need of their tool results.]
//	SUMMARY
//	[End of the summary. The conversation continues.]
func SummaryMessage(summary string) string {
	return summaryHeader + "\n" + strings.TrimSpace(summary) + "\n" + summaryFooter
}

// summarizerPrompt is the system prompt of the summarizing requests.
const summarizerPrompt = `You compact conversations between a user and an AI assistant that calls tools. You are given the older part of one, as text; the assistant will continue the conversation with your summary in place of that part, without seeing it again. Write a summary that keeps all the assistant needs to carry on: the user's requests, goals, preferences and constraints; what was decided, and why; the facts learned (file paths, names, identifiers, commands, values, errors and what the tools found); what was done and what remains to do. Where the conversation starts with a summary of a still earlier part, fold it into yours. Be concise and factual. Write only the summary.`

// Compact elides the older tool results, then, if the request is still
// over the budget (or req.Force), summarizes the older turns.
func (c DefaultCompactor) Compact(ctx context.Context, req CompactRequest) ([]llm.Message, error) {
	msgs := slices.Clone(req.Messages)
	calls := resultCalls(msgs)
	if n, saved := c.elideOlder(&req, msgs, calls); n > 0 {
		req.report("elided %s (%s tokens)", plural(n, "older tool result"), thousands(saved))
	}
	if !req.Force && req.count(msgs) <= req.Budget {
		return msgs, nil
	}
	summaryMax := c.summaryTokens(req.Budget)
	cut := c.cut(&req, msgs, summaryMax)
	if !req.Force {
		// The turns kept verbatim must fit with the summary: if they do
		// not, their largest tool results go too.
		reserve := 0
		if cut > 0 {
			reserve = summaryMax + summaryOverhead
		}
		if over := req.count(msgs[cut:]) + reserve - req.Budget; over > 0 {
			if n, saved := elideLargest(&req, msgs, calls, cut, over); n > 0 {
				req.report("elided %s of the latest turns (%s tokens)", plural(n, "tool result"), thousands(saved))
			}
		}
		if cut == 0 || req.count(msgs) <= req.Budget || req.count(msgs[cut:])+reserve > req.Budget {
			// Nothing to summarize, no need, or no use.
			return msgs, nil
		}
	}
	if cut == 0 {
		return msgs, nil
	}
	return c.summarize(ctx, &req, msgs, cut, summaryMax)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// resultCalls maps the index of each tool result of msgs to the call it
// answers (a call of the assistant message before its run of results).
func resultCalls(msgs []llm.Message) map[int]llm.ToolCall {
	out := map[int]llm.ToolCall{}
	var calls []llm.ToolCall
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			calls = m.ToolCalls
		case llm.RoleTool:
			if j := slices.IndexFunc(calls, func(c llm.ToolCall) bool { return c.ID == m.ToolCallID }); j >= 0 {
				out[i] = calls[j]
			}
		default:
			calls = nil
		}
	}
	return out
}

// elideAt replaces the tool result msgs[i] by its placeholder, when that
// is shorter, and returns the tokens saved.
func elideAt(req *CompactRequest, msgs []llm.Message, calls map[int]llm.ToolCall, i int) int {
	m := msgs[i]
	if m.Role != llm.RoleTool || strings.HasPrefix(m.Content, elidedPrefix) {
		return 0
	}
	c := calls[i]
	was := req.tokens(m)
	m.Content = ElidedResult(c.Name, c.Arguments, was, m.IsError)
	m.Images = nil
	now := req.tokens(m)
	if now >= was {
		return 0
	}
	msgs[i] = m
	return was - now
}

// elideOlder replaces the tool results of msgs but those of the latest
// KeepToolTurns calling messages by their placeholder; it returns how
// many it replaced and the tokens that saved.
func (c DefaultCompactor) elideOlder(req *CompactRequest, msgs []llm.Message, calls map[int]llm.ToolCall) (n, saved int) {
	keep := c.KeepToolTurns
	if keep == 0 {
		keep = DefaultKeepToolTurns
	}
	keep = max(keep, 0)
	var calling []int
	for i, m := range msgs {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			calling = append(calling, i)
		}
	}
	if len(calling) <= keep {
		return 0, 0
	}
	end := len(msgs)
	if keep > 0 {
		end = calling[len(calling)-keep]
	}
	for i := range end {
		if s := elideAt(req, msgs, calls, i); s > 0 {
			n++
			saved += s
		}
	}
	return n, saved
}

// elideLargest elides the largest tool results of msgs[from:] until that
// saves need tokens, or none is left.
func elideLargest(req *CompactRequest, msgs []llm.Message, calls map[int]llm.ToolCall, from, need int) (n, saved int) {
	var results []int
	for i := from; i < len(msgs); i++ {
		if msgs[i].Role == llm.RoleTool {
			results = append(results, i)
		}
	}
	size := make(map[int]int, len(results))
	for _, i := range results {
		size[i] = req.tokens(msgs[i])
	}
	slices.SortStableFunc(results, func(a, b int) int { return size[b] - size[a] })
	for _, i := range results {
		if saved >= need {
			break
		}
		if s := elideAt(req, msgs, calls, i); s > 0 {
			n++
			saved += s
		}
	}
	return n, saved
}

func (c DefaultCompactor) summaryTokens(budget int) int {
	if c.SummaryTokens > 0 {
		return c.SummaryTokens
	}
	return min(max(budget/8, 256), 4096)
}

// summaryOverhead is the tokens of the summary's framing, about.
const summaryOverhead = 60

// summarizerOverhead is the tokens of a summarizing request besides the
// conversation and the earlier summary, about.
const summarizerOverhead = 600

// cut is where the conversation is cut for a summary: before the first
// user message from which the turns fit in KeepShare of the budget with
// the summary, or else before the latest user message (forced: always);
// 0 when no user message but the first starts a turn.
func (c DefaultCompactor) cut(req *CompactRequest, msgs []llm.Message, summaryMax int) int {
	var bounds []int
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == llm.RoleUser {
			bounds = append(bounds, i)
		}
	}
	if len(bounds) == 0 {
		return 0
	}
	last := bounds[len(bounds)-1]
	if req.Force {
		return last
	}
	share := c.KeepShare
	if share <= 0 || share > 1 {
		share = DefaultKeepShare
	}
	target := int(share * float64(req.Budget))
	base := req.count(nil) + summaryMax + summaryOverhead
	tail := 0 // the tokens of msgs[i:]
	cut := last
	for i := len(msgs) - 1; i >= bounds[0]; i-- {
		tail += req.tokens(msgs[i])
		if base+tail > target {
			break
		}
		if msgs[i].Role == llm.RoleUser && i > 0 {
			cut = i
		}
	}
	return cut
}

// summarize replaces msgs[:cut] by a summary the model writes, at the
// head of msgs[cut], a user message.
func (c DefaultCompactor) summarize(ctx context.Context, req *CompactRequest, msgs []llm.Message, cut, summaryMax int) ([]llm.Message, error) {
	if req.Provider == nil {
		return msgs, nil
	}
	tokens := make([]int, cut)
	total := 0
	for i := range tokens {
		tokens[i] = req.tokens(msgs[i])
		total += tokens[i]
	}
	summary, err := c.summarizeOlder(ctx, req, msgs[:cut], tokens, summaryMax)
	if err != nil || summary == "" {
		return msgs, err
	}
	first := msgs[cut]
	text := SummaryMessage(summary)
	if first.Content != "" {
		text += "\n\n" + first.Content
	}
	first.Content = text
	out := append([]llm.Message{first}, msgs[cut+1:]...)
	req.report("summarized %s (%s tokens) into %s tokens", plural(cut, "earlier message"), thousands(total), thousands(textTokens(summary)))
	return out, nil
}

// summarizeOlder has the model summarize older (whose messages' tokens
// are tokens), in as many requests as it takes for each to fit the
// budget, each extending the summary of the one before. It returns ""
// when the budget leaves no room to summarize.
func (c DefaultCompactor) summarizeOlder(ctx context.Context, req *CompactRequest, older []llm.Message, tokens []int, summaryMax int) (string, error) {
	room := req.Budget - summaryMax - summarizerOverhead
	if room < 2*summaryMax {
		return "", nil
	}
	var (
		summary, summaryTokens = "", 0
		chunk                  strings.Builder
		chunkTokens            int
		names                  = map[string]string{}
	)
	flush := func() error {
		if chunk.Len() == 0 {
			return nil
		}
		s, err := c.ask(ctx, req, summary, chunk.String(), summaryMax)
		if err != nil {
			return err
		}
		summary, summaryTokens = s, textTokens(s)
		chunk.Reset()
		chunkTokens = 0
		return nil
	}
	for i, m := range older {
		text := renderMessage(m, names)
		n := tokens[i]
		if chunkTokens > 0 && summaryTokens+chunkTokens+n > room {
			if err := flush(); err != nil {
				return "", err
			}
		}
		if avail := room - summaryTokens; n > avail {
			// One message larger than a request: its head and tail.
			text = cutMiddle(text, len(text)*avail/max(n, 1))
			n = avail
		}
		chunk.WriteString(text)
		chunkTokens += n
	}
	if err := flush(); err != nil {
		return "", err
	}
	return summary, nil
}

// ask has the model summarize conversation, continuing summary.
func (c DefaultCompactor) ask(ctx context.Context, req *CompactRequest, summary, conversation string, summaryMax int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Summarize the conversation below in at most about %d words.\n\n", summaryMax*3/4)
	if summary != "" {
		b.WriteString("It continues an earlier part, whose summary follows: write one summary of both.\n\n<summary of the earlier part>\n")
		b.WriteString(summary)
		b.WriteString("\n</summary of the earlier part>\n\n")
	}
	b.WriteString("<conversation>\n")
	b.WriteString(conversation)
	b.WriteString("</conversation>")
	resp, err := req.Provider.Chat(ctx, &llm.Request{
		Model:     req.Model,
		System:    summarizerPrompt,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: b.String()}},
		MaxTokens: summaryMax,
	})
	if err != nil {
		return "", fmt.Errorf("summarizing: %w", err)
	}
	s := strings.TrimSpace(resp.Message.Content)
	if s == "" {
		return "", errors.New("summarizing: the model answered no summary")
	}
	return s, nil
}

// renderMessage renders m as SessionContext does, learning the names of
// the tools called into names (call ID → name).
func renderMessage(m llm.Message, names map[string]string) string {
	var b strings.Builder
	line := func(prefix, text string) {
		b.WriteString(prefix)
		b.WriteString(strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n  "))
		b.WriteByte('\n')
	}
	switch m.Role {
	case llm.RoleTool:
		name := names[m.ToolCallID]
		if name == "" {
			name = m.ToolCallID
		}
		if m.IsError {
			name += " (error)"
		}
		line("tool "+name+": ", m.Content)
	default:
		if m.Content != "" || len(m.ToolCalls) == 0 {
			text := m.Content
			if len(m.Images) > 0 {
				text = fmt.Sprintf("[%d image(s)] %s", len(m.Images), text)
			}
			line(string(m.Role)+": ", text)
		}
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
			line(string(m.Role)+" → "+c.Name+"(", string(c.Arguments)+")")
		}
	}
	return b.String()
}

// cutMiddle shortens s to about n bytes, keeping its head and tail.
func cutMiddle(s string, n int) string {
	const mark = "\n  […]\n  "
	if len(s) <= n || n <= len(mark) {
		if len(s) <= n {
			return s
		}
		n = len(mark) + 2
	}
	head := (n - len(mark)) / 2
	tail := n - len(mark) - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + mark + s[t:]
}
