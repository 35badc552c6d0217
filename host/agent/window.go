package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/agenthost/agenthost/host/llm"
)

// DefaultContextWindow is the context window of a model ContextWindowOf
// does not know, in tokens.
const DefaultContextWindow = 128_000

// DefaultCompactAt is the share of the context window a request may fill
// when Options.CompactAt is zero.
const DefaultCompactAt = 0.8

// ErrContextWindow: the conversation does not fit the model's context
// window even compacted; the request was not sent. The error wrapping it
// says the numbers.
var ErrContextWindow = errors.New("context window exceeded")

// contextWindows are the windows of the models ContextWindowOf knows, by
// name prefix (the longest prefix that matches wins).
var contextWindows = map[string]int{
	"claude-":       200_000,
	"gpt-5":         400_000,
	"gpt-4.1":       1_047_576,
	"gpt-4o":        128_000,
	"gpt-4-turbo":   128_000,
	"gpt-4-1106":    128_000,
	"gpt-4-0125":    128_000,
	"gpt-4-vision":  128_000,
	"gpt-4-32k":     32_768,
	"gpt-4":         8_192,
	"gpt-3.5-turbo": 16_385,
	"o1":            200_000,
	"o1-mini":       128_000,
	"o1-preview":    128_000,
	"o3":            200_000,
	"o4":            200_000,
	"llama3":        8_192,
	"llama-3":       8_192,
	"llama3.1":      128_000,
	"llama3.2":      128_000,
	"llama3.3":      128_000,
	"llama-3.1":     128_000,
	"llama-3.2":     128_000,
	"llama-3.3":     128_000,
	"gemini-1.5":    1_048_576,
	"gemini-2":      1_048_576,
}

// ContextWindowOf returns the context window of the model named model, in
// tokens, as its maker documents it: Claude 200,000; GPT-4o and GPT-4
// Turbo 128,000; GPT-4.1 1,047,576; o1, o3 and o4 200,000 (o1-mini and
// o1-preview 128,000); GPT-5 400,000; Llama 3.1 to 3.3 128,000 (Llama 3
// 8,192); Gemini 1.5 and 2 1,048,576. The name may carry a router's
// prefix ("anthropic/claude-…", "us.anthropic.claude-…") and a tag
// ("llama3.1:8b"). Any other model: DefaultContextWindow.
func ContextWindowOf(model string) int {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimPrefix(name, "meta-")
	for {
		if n := windowByPrefix(name); n > 0 {
			return n
		}
		// "us.anthropic.claude-…": try after each dot.
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return DefaultContextWindow
		}
		name = name[i+1:]
	}
}

func windowByPrefix(name string) int {
	best, size := -1, 0
	for p, n := range contextWindows {
		if strings.HasPrefix(name, p) && len(p) > best {
			best, size = len(p), n
		}
	}
	return size
}

// The token counts of what a request carries besides text, estimated as
// OpenAI documents them for its chat format.
const (
	// tokensPerMessage: the role and the delimiters of a message.
	tokensPerMessage = 4
	// tokensPerToolCall: the framing of a tool call (its name and
	// arguments are counted as text).
	tokensPerToolCall = 8
	// tokensPerTool: the framing of a tool's definition.
	tokensPerTool = 8
	// tokensPerRequest: the priming of the answer, and the system
	// prompt's framing.
	tokensPerRequest = 3
	// tokensPerImage is what one image is counted as: about what Claude
	// charges for an image of 1.15 megapixels, the most before it
	// downscales, and above GPT-4o's charge for a high-detail image of
	// 1024×1024.
	tokensPerImage = 1_600
	// minCalibration is the smallest estimate a provider's count
	// corrects: below it the provider's own framing (Anthropic's tool-use
	// system prompt...) would weigh too much.
	minCalibration = 1_000
)

// encoding is o200k_base, loaded once (the ranks are embedded by
// tiktoken-go-loader: nothing is downloaded); nil when it failed to load,
// and text is then counted as a quarter of its bytes.
var encoding = sync.OnceValue(func() *tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		return nil
	}
	return enc
})

// textTokens counts the tokens of s with o200k_base.
func textTokens(s string) int {
	if s == "" {
		return 0
	}
	if enc := encoding(); enc != nil {
		return len(enc.EncodeOrdinary(s))
	}
	return (len(s) + 3) / 4
}

// counts caches the token counts of messages, tool lists and system
// prompts by a hash of their content: a message does not change once in
// the conversation, so a request counts only what is new. It keeps what
// the recent requests used (two generations of maxCached entries).
type counts struct {
	mu        sync.Mutex
	cur, prev map[uint64]int
}

const maxCached = 1 << 14

var (
	tokenCache = &counts{cur: map[uint64]int{}}
	hashSeed   = maphash.MakeSeed()
)

func (c *counts) get(key uint64) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.cur[key]; ok {
		return n, true
	}
	n, ok := c.prev[key]
	if ok {
		c.putLocked(key, n)
	}
	return n, ok
}

func (c *counts) put(key uint64, n int) {
	c.mu.Lock()
	c.putLocked(key, n)
	c.mu.Unlock()
}

func (c *counts) putLocked(key uint64, n int) {
	if len(c.cur) >= maxCached {
		c.prev, c.cur = c.cur, make(map[uint64]int, maxCached/4)
	}
	c.cur[key] = n
}

// cached returns the count of the thing whose content hashes to key,
// computing it with count (outside the lock) when it is not cached.
func cached(key uint64, count func() int) int {
	if n, ok := tokenCache.get(key); ok {
		return n
	}
	n := count()
	tokenCache.put(key, n)
	return n
}

func writeField(h *maphash.Hash, s string) {
	var n [8]byte
	h.Write(strconv.AppendInt(n[:0], int64(len(s)), 36))
	h.WriteByte(0)
	h.WriteString(s)
}

// messageKey hashes what a message's count depends on.
func messageKey(m *llm.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteByte('m')
	writeField(&h, string(m.Role))
	writeField(&h, m.Content)
	writeField(&h, m.ToolCallID)
	for _, c := range m.ToolCalls {
		h.WriteByte('c')
		writeField(&h, c.ID)
		writeField(&h, c.Name)
		writeField(&h, string(c.Arguments))
	}
	for _, t := range m.Thinking {
		h.WriteByte('t')
		writeField(&h, t.Text)
	}
	for _, im := range m.Images {
		h.WriteByte('i')
		writeField(&h, strconv.Itoa(len(im.Data)))
	}
	return h.Sum64()
}

// minCachedText is the length from which a text's count is cached by
// itself, besides the count of the message that holds it: the same file
// read again, or a tool result elided then fetched again, is counted once.
const minCachedText = 512

// contentTokens counts a message's content, cached when it is long.
func contentTokens(s string) int {
	if len(s) < minCachedText {
		return textTokens(s)
	}
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteByte('x')
	h.WriteString(s)
	return cached(h.Sum64(), func() int { return textTokens(s) })
}

// messageTokens is the estimated tokens of one message, cached.
func messageTokens(m *llm.Message) int {
	return cached(messageKey(m), func() int {
		n := tokensPerMessage + contentTokens(m.Content) + len(m.Images)*tokensPerImage
		if m.ToolCallID != "" {
			n += textTokens(m.ToolCallID)
		}
		for _, c := range m.ToolCalls {
			n += tokensPerToolCall + textTokens(c.ID) + textTokens(c.Name) + textTokens(string(c.Arguments))
		}
		for _, t := range m.Thinking {
			n += textTokens(t.Text)
		}
		return n
	})
}

func messagesTokens(msgs []llm.Message) int {
	n := 0
	for i := range msgs {
		n += messageTokens(&msgs[i])
	}
	return n
}

// fixedTokens is the estimated tokens of a request besides its messages:
// the system prompt and the tools' definitions (their JSON), cached.
func fixedTokens(system string, tools []llm.Tool) int {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteByte('s')
	writeField(&h, system)
	for _, t := range tools {
		h.WriteByte('t')
		writeField(&h, t.Name)
		writeField(&h, t.Description)
		writeField(&h, string(t.Parameters))
	}
	return cached(h.Sum64(), func() int {
		n := tokensPerRequest
		if system != "" {
			n += tokensPerMessage + textTokens(system)
		}
		for _, t := range tools {
			n += tokensPerTool + textTokens(t.Name) + textTokens(t.Description) + textTokens(string(t.Parameters))
		}
		return n
	})
}

// EstimateTokens returns the input tokens of req as counted with OpenAI's
// o200k_base encoding: its system prompt, its tools' definitions and its
// messages (text, tool call names and arguments, a few tokens of framing
// each, a fixed 1,600 tokens an image). Counts are cached by content, so
// a conversation that grows costs only its new messages. It is what the
// agent compares with the context window, before it corrects it by what
// the provider reported (see Options.ContextWindow).
func EstimateTokens(req *llm.Request) int {
	return fixedTokens(req.System, req.Tools) + messagesTokens(req.Messages)
}

// window keeps the conversation inside the model's context window.
type window struct {
	size      int // Options.ContextWindow; 0: ContextWindowOf(model)
	compactAt float64
	compactor Compactor

	mu sync.Mutex
	// factor corrects the estimate: the provider's count over ours,
	// smoothed over the requests observed (n of them).
	factor float64
	n      int
	// last is the request fit last saw, with its raw estimate.
	last    *llm.Request
	lastRaw int
	// inflight is the compaction fit made for the request in flight; it
	// enters the conversation when the request is answered (observe), so
	// that a request that fails leaves the conversation as it was.
	inflight *compaction

	// compacting serializes compactions (fit, Compact).
	compacting sync.Mutex
}

type compaction struct {
	agent *Agent
	req   *llm.Request
	// base is the conversation compacted: its length and the key of its
	// last message.
	base    int
	baseKey uint64
	msgs    []llm.Message
}

func newWindow(opts Options) *window {
	w := &window{size: opts.ContextWindow, compactAt: opts.CompactAt, compactor: opts.Compactor, factor: 1}
	if w.compactAt <= 0 || w.compactAt > 1 {
		w.compactAt = DefaultCompactAt
	}
	if w.compactor == nil {
		w.compactor = DefaultCompactor{}
	}
	return w
}

// windowOf is the context window of model.
func (w *window) windowOf(model string) int {
	if w.size > 0 {
		return w.size
	}
	return ContextWindowOf(model)
}

// budget is what a request may fill: CompactAt of the window, less the
// output the request reserves.
func (w *window) budget(win, maxTokens int) int {
	b := int(w.compactAt * float64(win))
	if maxTokens > 0 {
		b -= maxTokens
	}
	return max(b, 0)
}

// correct scales a raw estimate by what the provider counted.
func (w *window) correct(raw int) int {
	w.mu.Lock()
	f := w.factor
	w.mu.Unlock()
	return int(math.Ceil(float64(raw) * f))
}

// observe corrects the estimate with what the provider counted for req,
// and lets the compaction made for req enter the conversation.
func (w *window) observe(req *llm.Request, used llm.Usage) {
	w.mu.Lock()
	p := w.inflight
	if p != nil && p.req == req {
		w.inflight = nil
	} else {
		p = nil
	}
	raw := -1
	if req == w.last {
		raw = w.lastRaw
	}
	w.mu.Unlock()
	if p != nil {
		p.commit()
	}
	if used.InputTokens <= 0 {
		return
	}
	if raw < 0 {
		raw = EstimateTokens(req)
	}
	if raw < minCalibration {
		return
	}
	ratio := min(max(float64(used.InputTokens)/float64(raw), 0.5), 2.0)
	w.mu.Lock()
	w.n++
	// The mean of the first observations, then a moving average that
	// follows the recent ones.
	weight := max(1/float64(w.n), 0.3)
	w.factor += weight * (ratio - w.factor)
	w.mu.Unlock()
}

func (w *window) remember(req *llm.Request, raw int) {
	w.mu.Lock()
	w.last, w.lastRaw = req, raw
	w.mu.Unlock()
}

// commit puts the compacted conversation in place of the one it was made
// from, keeping what was appended since; nothing if that conversation is
// gone (ClearContext...).
func (p *compaction) commit() bool {
	a := p.agent
	a.mu.Lock()
	defer a.mu.Unlock()
	if !p.applies(a.messages) {
		return false
	}
	a.messages = append(slices.Clone(p.msgs), a.messages[p.base:]...)
	return true
}

func (p *compaction) applies(msgs []llm.Message) bool {
	if len(msgs) < p.base {
		return false
	}
	if p.base == 0 {
		return true
	}
	return messageKey(&msgs[p.base-1]) == p.baseKey
}

// fit makes req fit the context window, compacting the conversation: it
// counts the request and, when it is over the budget (CompactAt of the
// window, less req.MaxTokens), has the compactor make the conversation
// smaller. req.Messages is then the compacted conversation, which replaces
// the agent's once the request is answered. A request that does not fit
// even so is not sent: the error wraps ErrContextWindow.
func (a *Agent) fit(ctx context.Context, req *llm.Request, emit func(Event) error) error {
	w := a.window
	w.mu.Lock()
	w.inflight = nil
	w.mu.Unlock()
	win := w.windowOf(req.Model)
	budget := w.budget(win, req.MaxTokens)
	raw := EstimateTokens(req)
	w.remember(req, raw)
	if w.correct(raw) <= budget {
		return nil
	}
	msgs, err := a.compact(ctx, req, win, budget, false, emit)
	if err != nil {
		return err
	}
	if msgs == nil {
		return nil
	}
	p := &compaction{agent: a, req: req, base: len(req.Messages), msgs: msgs}
	if p.base > 0 {
		p.baseKey = messageKey(&req.Messages[p.base-1])
	}
	req.Messages = slices.Clone(msgs)
	w.remember(req, EstimateTokens(req))
	w.mu.Lock()
	w.inflight = p
	w.mu.Unlock()
	return nil
}

// compact runs the compactor over req's conversation and returns the
// compacted one, nil when the compactor changed nothing. Unless force, a
// result over budget is an error wrapping ErrContextWindow. The tokens of
// the compactor's model calls are added to the agent's usage and, with
// emit, reported (EventUsage each), then what was done (EventCompacted).
func (a *Agent) compact(ctx context.Context, req *llm.Request, win, budget int, force bool, emit func(Event) error) ([]llm.Message, error) {
	w := a.window
	w.compacting.Lock()
	defer w.compacting.Unlock()
	fixed := fixedTokens(req.System, req.Tools)
	count := func(msgs []llm.Message) int { return w.correct(fixed + messagesTokens(msgs)) }
	before := count(req.Messages)
	var notes []string
	meter := &meteredProvider{Provider: a.provider}
	out, err := w.compactor.Compact(ctx, CompactRequest{
		Model:    req.Model,
		System:   req.System,
		Messages: slices.Clone(req.Messages),
		Budget:   budget,
		Window:   win,
		Force:    force,
		Tokens:   func(m llm.Message) int { return w.correct(messageTokens(&m)) },
		Count:    count,
		Provider: meter,
		Report:   func(what string) { notes = append(notes, what) },
	})
	calls := meter.calls()
	if len(calls) > 0 {
		a.mu.Lock()
		for _, u := range calls {
			a.usage = a.usage.Add(u)
		}
		a.mu.Unlock()
		if emit != nil {
			for _, u := range calls {
				if err := emit(Event{Type: EventUsage, Usage: u}); err != nil {
					return nil, err
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("agent: compacting the conversation: %w", err)
	}
	if err := checkToolResults(out); err != nil && checkToolResults(req.Messages) == nil {
		return nil, fmt.Errorf("agent: the compactor returned a conversation the model would refuse: %w", err)
	}
	after := count(out)
	if !force && after > budget {
		model := req.Model
		if model == "" {
			model = "the model"
		}
		return nil, fmt.Errorf("agent: %w: the conversation needs %s tokens, more than the budget of %s tokens of the %s-token window of %s, even compacted",
			ErrContextWindow, thousands(after), thousands(budget), thousands(win), model)
	}
	if sameConversation(req.Messages, out) {
		return nil, nil
	}
	if emit != nil {
		text := fmt.Sprintf("compacted the conversation from %s to %s tokens (the budget is %s tokens of the %s-token window)",
			thousands(before), thousands(after), thousands(budget), thousands(win))
		if len(notes) > 0 {
			text += ": " + strings.Join(notes, "; ")
		}
		if err := emit(Event{Type: EventCompacted, Text: text}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nextRequest is the request the next model call would send, as the
// conversation stands; with inflight, the compaction made for the request
// in flight applied.
func (a *Agent) nextRequest(inflight bool) *llm.Request {
	var p *compaction
	if inflight {
		a.window.mu.Lock()
		p = a.window.inflight
		a.window.mu.Unlock()
	}
	a.mu.Lock()
	msgs := slices.Clone(a.messages)
	req := &llm.Request{Model: a.model, System: a.system, MaxTokens: a.maxTokens}
	a.mu.Unlock()
	if p != nil && p.applies(msgs) {
		msgs = append(slices.Clone(p.msgs), msgs[p.base:]...)
	}
	req.Messages = msgs
	req.Tools = a.Tools()
	return req
}

// ContextUsage returns the tokens the next request would carry as the
// conversation stands (system prompt, tools and messages, estimated and
// corrected by what the provider has reported so far) and the model's
// context window.
func (a *Agent) ContextUsage() (used, window int) {
	req := a.nextRequest(true)
	return a.window.correct(EstimateTokens(req)), a.window.windowOf(req.Model)
}

// Compact compacts the conversation now, whatever its size, as far as the
// compactor goes (the default one elides the older tool results and
// summarizes all but the latest user turn); what /compact does. Messages
// appended meanwhile are kept after the compacted ones; the conversation
// is left as it was on an error, or when it was cleared or cut meanwhile.
func (a *Agent) Compact(ctx context.Context) error {
	req := a.nextRequest(false)
	if len(req.Messages) == 0 {
		return nil
	}
	win := a.window.windowOf(req.Model)
	msgs, err := a.compact(ctx, req, win, a.window.budget(win, req.MaxTokens), true, nil)
	if err != nil || msgs == nil {
		return err
	}
	p := &compaction{agent: a, base: len(req.Messages), msgs: msgs}
	p.baseKey = messageKey(&req.Messages[p.base-1])
	if !p.commit() {
		return errors.New("agent: the conversation changed while it was being compacted")
	}
	return nil
}

// meteredProvider is the agent's provider as a compactor sees it: the
// usage of its calls is recorded for the agent's.
type meteredProvider struct {
	llm.Provider
	mu    sync.Mutex
	usage []llm.Usage
}

func (p *meteredProvider) record(resp *llm.Response) {
	if resp != nil {
		p.mu.Lock()
		p.usage = append(p.usage, resp.Usage)
		p.mu.Unlock()
	}
}

func (p *meteredProvider) calls() []llm.Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.usage)
}

func (p *meteredProvider) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := p.Provider.Chat(ctx, req)
	p.record(resp)
	return resp, err
}

func (p *meteredProvider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta) error) (*llm.Response, error) {
	resp, err := p.Provider.Stream(ctx, req, onDelta)
	p.record(resp)
	return resp, err
}

func sameConversation(a, b []llm.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if messageKey(&a[i]) != messageKey(&b[i]) {
			return false
		}
	}
	return true
}

// checkToolResults checks what the providers check of the tool calls of
// a conversation: each assistant tool call is answered by a tool result
// among the messages right after it, and each tool result answers a call
// of the assistant message right before its run of results.
func checkToolResults(msgs []llm.Message) error {
	var open map[string]bool // the calls awaiting their result
	for i, m := range msgs {
		if m.Role == llm.RoleTool {
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d is the result of tool call %q, which the assistant message before it did not make (or is answered twice)", i+1, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d follows tool calls that have no result: %s", i+1, strings.Join(slices.Sorted(maps.Keys(open)), ", "))
		}
		open = nil
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			open = make(map[string]bool, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("the last tool calls have no result: %s", strings.Join(slices.Sorted(maps.Keys(open)), ", "))
	}
	return nil
}

// thousands writes n with thousands separators: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
