package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// providerDefaults are the providers chat knows, with their default model,
// base URL and key variable.
var providerDefaults = map[string]struct {
	model, baseURL, keyVar string
}{
	"openai":     {"gpt-4o-mini", "", "OPENAI_API_KEY"},
	"anthropic":  {"claude-sonnet-4-5", "", "ANTHROPIC_API_KEY"},
	"openrouter": {"openai/gpt-4o-mini", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
	"ollama":     {"llama3.2", "http://localhost:11434/v1", ""},
}

// inferOrder is the order in which chat looks for a key when --provider is
// not given.
var inferOrder = []string{"anthropic", "openai", "openrouter"}

const noProviderMsg = "chat: no model provider configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, or pass --provider openai|anthropic|openrouter|ollama (with --model and --base-url as needed)"

// chatFlags are the flags of agenthost chat.
type chatFlags struct {
	provider, model, baseURL string
	system, sessionFile      string
	maxTurns                 int
	maxTokens                int
	temperature              *float64 // nil: the provider's default
	message                  string
	session                  string // --session NAME
	resume                   bool
	// noToolImages and sampling: agent.Options.NoToolImages and
	// agent.Options.Sampling.
	noToolImages, sampling bool
}

// setTemperature parses --temperature.
func (f *chatFlags) setTemperature(v string) error {
	t, err := strconv.ParseFloat(v, 64)
	if err != nil || t < 0 || t > 2 || math.IsNaN(t) {
		return errors.New("want a number from 0 to 2")
	}
	f.temperature = &t
	return nil
}

// newProvider makes the model client the flags and the environment
// configure, and returns it with the model to ask for.
func (f *chatFlags) newProvider() (llm.Provider, string, error) {
	name := f.provider
	if name == "" {
		for _, n := range inferOrder {
			if os.Getenv(providerDefaults[n].keyVar) != "" {
				name = n
				break
			}
		}
		if name == "" {
			return nil, "", usagef("%s", noProviderMsg)
		}
	}
	def, ok := providerDefaults[name]
	if !ok {
		return nil, "", usagef("chat: unknown provider %q: use openai, anthropic, openrouter or ollama", name)
	}
	var key string
	if def.keyVar != "" {
		key = os.Getenv(def.keyVar)
		// A local OpenAI-compatible server (--base-url) may need no key.
		if key == "" && !(name == "openai" && f.baseURL != "") {
			return nil, "", usagef("chat: the %s provider needs %s to be set", name, def.keyVar)
		}
	}
	model := f.model
	if model == "" {
		model = def.model
	}
	baseURL := f.baseURL
	if baseURL == "" {
		baseURL = def.baseURL
	}
	if name == "anthropic" {
		return llm.NewAnthropic(llm.AnthropicConfig{BaseURL: baseURL, APIKey: key}), model, nil
	}
	return llm.NewOpenAI(llm.OpenAIConfig{Name: name, BaseURL: baseURL, APIKey: key}), model, nil
}

func chatCommand() *command {
	f := &chatFlags{}
	var provider llm.Provider
	var model string
	return &command{
		approval: policy.ModeAsk,
		usage:    "agenthost chat [--provider NAME] [--model MODEL] [-m TEXT]",
		details:  chatDetails,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.provider, "provider", "", "the model `PROVIDER`: openai, anthropic, openrouter or ollama (default: the first of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY set)")
			fs.StringVar(&f.model, "model", "", "the `MODEL` (default gpt-4o-mini, claude-sonnet-4-5, openai/gpt-4o-mini or llama3.2, by provider)")
			fs.StringVar(&f.baseURL, "base-url", "", "the API's base `URL`, for OpenAI-compatible servers")
			fs.StringVar(&f.system, "system", "", "the system `PROMPT`")
			fs.StringVar(&f.sessionFile, "session-file", "", "the `FILE` /save and save_session_context write")
			fs.IntVar(&f.maxTurns, "max-turns", agent.DefaultMaxTurns, "the most model calls for one answer")
			fs.IntVar(&f.maxTokens, "max-tokens", 0, "at most `N` tokens in each model answer (default: the provider client's; 4096 for anthropic)")
			fs.Func("temperature", "the sampling temperature `T`, 0 to 2 (default: the provider's)", f.setTemperature)
			fs.StringVar(&f.message, "m", "", "answer this `TEXT` once and exit")
			fs.StringVar(&f.session, "session", "", "keep the conversation as `NAME`, going on with it if it exists")
			fs.BoolVar(&f.resume, "resume", false, "go on with the latest conversation (or --session NAME's)")
			fs.BoolVar(&f.noToolImages, "no-tool-images", false, "send the model the text of MCP servers' images, not the images (for a model that takes none)")
			fs.BoolVar(&f.sampling, "sampling", false, "let MCP servers ask the model (sampling) during the calls of their tools")
		},
		prepare: func() error {
			if f.maxTokens < 0 {
				return usagef("chat: --max-tokens must not be negative")
			}
			if f.session != "" {
				if err := checkSessionName(f.session); err != nil {
					return usagef("chat: --session: %v", err)
				}
			}
			var err error
			provider, model, err = f.newProvider()
			return err
		},
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 0 {
				return usagef("chat takes no arguments (use -m TEXT for a single question)")
			}
			// A session on a terminal asks its user about the calls the
			// guard asks about; without one (-m, or input that is not a
			// terminal) the guard denies them, saying what would allow them.
			var approver policy.Approver
			var asker *terminalApprover
			if f.message == "" {
				if asker = newTerminalApprover(env.stdin, env.stdout); asker != nil {
					approver = asker
				}
			}
			a, err := agent.New(ctx, provider, agent.Options{
				Model:                  model,
				SystemPrompt:           f.system,
				SessionContextFilePath: f.sessionFile,
				MaxTurns:               f.maxTurns,
				MaxTokens:              f.maxTokens,
				Temperature:            f.temperature,
				Registry:               env.registry,
				Approver:               approver,
				NoToolImages:           f.noToolImages,
				Sampling:               f.sampling,
			})
			if err != nil {
				return err
			}
			defer a.Close()
			c := &chatSession{agent: a, registry: env.registry, approver: asker, out: env.stdout, errOut: env.stderr, lineStart: true}
			if err := c.openSession(f); err != nil {
				return err
			}
			if f.message != "" {
				err := c.ask(ctx, f.message)
				c.saveSession()
				return err
			}
			return c.interact(ctx, env.stdin)
		},
	}
}

// chatSession prints one conversation.
type chatSession struct {
	agent     *agent.Agent
	registry  *host.ToolRegistry // the agent's, for /tools
	approver  *terminalApprover  // asks about calls on the terminal; nil without one
	out       io.Writer
	errOut    io.Writer
	lineStart bool // the output is at the start of a line

	// store and name are where the conversation is kept; name is ""
	// when it is not (chat -m without --session or --resume).
	store sessionStore
	name  string
	// images go with the next question (/image).
	images []llm.Image
}

// openSession finds the conversation to keep: --session NAME's (resumed
// when it exists), the latest with --resume, a new one in an interactive
// session; chat -m alone keeps none.
func (c *chatSession) openSession(f *chatFlags) error {
	if f.message != "" && f.session == "" && !f.resume {
		return nil
	}
	dir, err := sessionsDir()
	if err != nil {
		return err
	}
	c.store = sessionStore{dir: dir}
	c.name = f.session
	if f.resume && c.name == "" {
		list, err := c.store.list()
		if err != nil {
			return fmt.Errorf("chat: the saved conversations: %w", err)
		}
		if len(list) == 0 {
			return fmt.Errorf("chat --resume: no saved conversation in %s", textsafe.Name(dir))
		}
		c.name = list[0].name
	}
	if c.name == "" {
		c.name = c.store.newName(time.Now())
		return nil
	}
	st, ok, err := c.store.load(c.name)
	switch {
	case err != nil:
		return fmt.Errorf("chat: conversation %s: %w", c.name, err)
	case !ok && f.resume:
		return fmt.Errorf("chat --resume: no saved conversation %s in %s", c.name, textsafe.Name(dir))
	case !ok:
		return nil
	}
	if err := c.agent.Restore(st); err != nil {
		return fmt.Errorf("chat: conversation %s: %w", c.name, err)
	}
	fmt.Fprintf(c.errOut, "going on with conversation %s (%d messages)\n", c.name, len(st.Messages))
	return nil
}

// saveSession keeps the conversation, if it is kept; a failure is told
// and the session goes on.
func (c *chatSession) saveSession() {
	if c.name == "" {
		return
	}
	if err := c.store.save(c.name, c.agent.State()); err != nil {
		fmt.Fprintf(c.errOut, "warning: the conversation could not be saved: %v\n", err)
	}
}

func (c *chatSession) print(s string) {
	if s == "" {
		return
	}
	io.WriteString(c.out, s)
	c.lineStart = strings.HasSuffix(s, "\n")
}

// newline ends the current output line, if one is open.
func (c *chatSession) newline() {
	if !c.lineStart {
		c.print("\n")
	}
}

// ask streams the answer to one message.
func (c *chatSession) ask(ctx context.Context, text string) error {
	if c.approver != nil {
		c.approver.beginTurn()
	}
	images := c.images
	c.images = nil
	_, err := c.agent.ChatMessage(ctx, llm.Message{Content: text, Images: images}, func(ev agent.Event) error {
		switch ev.Type {
		case agent.EventText:
			c.print(ev.Text)
		case agent.EventToolCall:
			c.newline()
			c.print(fmt.Sprintf("→ %s %s\n", textsafe.Name(ev.ToolCall.Name), short(string(ev.ToolCall.Arguments), 80)))
		case agent.EventToolResult:
			mark := "←"
			if ev.IsError {
				mark = "✗"
			}
			c.print(fmt.Sprintf("%s %s\n", mark, short(ev.Result, 80)))
		case agent.EventWarning:
			c.newline()
			fmt.Fprintf(c.errOut, "warning: %s\n", short(ev.Text, 200))
		case agent.EventMessage:
			c.newline()
			switch ev.StopReason {
			case "refusal":
				c.print("(the model refused)\n")
			case "max_tokens":
				c.print("(the answer was cut off by the output limit)\n")
			}
		}
		return nil
	})
	c.newline()
	return err
}

const slashHelp = "commands: /tools, /enable NAME, /disable NAME, /save [REASON], /clear, /system TEXT, /context, /compact, /image PATH, /sessions, /exit"

// chatDetails is the end of chat --help.
const chatDetails = `In a session, a line is a question for the model, unless it is a command:
  /tools           list the tools, enabled or disabled
  /enable NAME     enable a tool for the rest of the session
  /disable NAME    disable a tool
  /save [REASON]   save the session's context (save_session_context, to --session-file)
  /clear           forget the conversation
  /system [TEXT]   show or set the system prompt
  /context         how much of the model's context window the conversation fills
  /compact         make the conversation smaller now (older tool results elided,
                   older turns summarized by the model)
  /image PATH      send the image with the next question
  /sessions        list the saved conversations
  /exit            end the session (also /quit, Ctrl-D)
Each conversation is saved, after every answer, under the user's data
directory (agenthost/sessions); --resume goes on with the latest, --session
NAME with a named one.
Ctrl-C stops the answer under way (a question that got no answer is
forgotten); at the prompt it ends the session.
A tool call that needs approval is asked about on the terminal: y runs it,
a runs it and the calls like it for the rest of the session, n denies it,
r denies it with a reason the model reads; Ctrl-C denies it and stops the
answer.
`

// interact reads lines from in until /exit, the end of input, or Ctrl-C at
// the prompt: slash commands act on the session, anything else goes to the
// model. Ctrl-C during an answer stops that answer only.
func (c *chatSession) interact(ctx context.Context, in io.Reader) error {
	intr, release := interrupts.claim()
	defer release()
	next, stop := c.lineReader(in)
	defer stop()
	c.print("agenthost chat: " + slashHelp + "\n")
	for {
		l, ok, err := next(ctx, intr)
		if !ok {
			c.print("\n")
			return err
		}
		line := strings.TrimSpace(l)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "/"):
			if c.slash(ctx, line) {
				return nil
			}
		default:
			if err := c.answer(ctx, line, intr); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				fmt.Fprintf(c.errOut, "error: %v\n", err)
			}
		}
	}
}

// answer asks one question; an interrupt stops the answer, and the
// session goes on.
func (c *chatSession) answer(ctx context.Context, text string, intr <-chan struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.saveSession()
	done := make(chan error, 1)
	go func() { done <- c.ask(ctx, text) }()
	select {
	case err := <-done:
		// A Ctrl-C pressed as the answer ended was meant for the answer,
		// not for the prompt that follows.
		select {
		case <-intr:
		default:
		}
		return err
	case <-intr:
		cancel()
		<-done
		c.print("(interrupted)\n")
		return nil
	}
}

// nextLine waits for the session's next line. ok is false at the end of
// the session: the end of input, Ctrl-C at the prompt, or ctx done; err
// says why when it is an error.
type nextLine func(ctx context.Context, intr <-chan struct{}) (line string, ok bool, err error)

// lineReader reads the session's lines from in: with line editing and
// history when in and the output are a terminal, else line by line.
func (c *chatSession) lineReader(in io.Reader) (next nextLine, stop func()) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if out, ok := c.out.(*os.File); ok && term.IsTerminal(int(out.Fd())) {
			return c.terminalLines(f, out)
		}
	}
	lines, readErr, stop := readLines(in)
	return func(ctx context.Context, intr <-chan struct{}) (string, bool, error) {
		c.print("> ")
		select {
		case l, ok := <-lines:
			if !ok {
				return "", false, readErr()
			}
			return l, true, nil
		case <-intr:
		case <-ctx.Done():
		}
		return "", false, nil
	}, stop
}

// terminalLines reads lines from a terminal with golang.org/x/term's line
// editor: arrows, Home, End, Ctrl-A/E/K/U/W and a history that Up and
// Down walk. The terminal is in raw mode only while a line is read, so
// that Ctrl-C during an answer is still the SIGINT that stops it; at the
// prompt, Ctrl-C and Ctrl-D end the session.
func (c *chatSession) terminalLines(in, out *os.File) (nextLine, func()) {
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, "> ")
	type read struct {
		line string
		err  error
	}
	reads := make(chan read, 1)
	return func(ctx context.Context, intr <-chan struct{}) (string, bool, error) {
		if w, h, err := term.GetSize(int(out.Fd())); err == nil && w > 0 && h > 0 {
			t.SetSize(w, h)
		}
		state, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return "", false, fmt.Errorf("chat: the terminal: %w", err)
		}
		defer term.Restore(int(in.Fd()), state)
		go func() {
			line, err := t.ReadLine()
			reads <- read{line, err}
		}()
		select {
		case r := <-reads:
			c.lineStart = true
			if r.err == io.EOF {
				return "", false, nil
			}
			if r.err != nil {
				return "", false, fmt.Errorf("chat: reading the terminal: %w", r.err)
			}
			return r.line, true, nil
		case <-intr:
		case <-ctx.Done():
		}
		// The read goes on until the process ends; nothing reads it.
		return "", false, nil
	}, func() {}
}

// readLines reads in line by line on a goroutine of its own, so that the
// session can wait for a line and for an interrupt at once. After the
// channel closes, readErr tells why; stop lets the goroutine go.
func readLines(in io.Reader) (lines <-chan string, readErr func() error, stop func()) {
	ch := make(chan string)
	quit := make(chan struct{})
	var err error
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			case <-quit:
				return
			}
		}
		err = sc.Err()
	}()
	// err is written before ch closes and read after: the close orders
	// them.
	return ch, func() error { return err }, sync.OnceFunc(func() { close(quit) })
}

// slash runs one slash command and reports whether the session ends.
func (c *chatSession) slash(ctx context.Context, line string) (exit bool) {
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch cmd {
	case "/exit", "/quit":
		return true
	case "/tools":
		for _, t := range c.registry.Tools() {
			c.print(fmt.Sprintf("  %-22s %s\n", t.Name, toolStatus(t)))
		}
	case "/enable", "/disable":
		if arg == "" {
			c.print(cmd + " needs a tool name\n")
			return false
		}
		toggle, done := c.agent.EnableTool, "enabled"
		if cmd == "/disable" {
			toggle, done = c.agent.DisableTool, "disabled"
		}
		if err := toggle(arg); err != nil {
			c.print(fmt.Sprintf("%s: %v\n", cmd, err))
		} else {
			c.print(done + " " + arg + "\n")
		}
	case "/save":
		if arg == "" {
			arg = "saved from agenthost chat"
		}
		c.print(c.agent.SaveContext(ctx, arg) + "\n")
	case "/clear":
		c.agent.ClearContext()
		c.saveSession()
		c.print("context cleared\n")
	case "/context":
		used, window := c.agent.ContextUsage()
		u := c.agent.Usage()
		c.print(fmt.Sprintf("context: %d of %d tokens (%.0f%%); so far %d tokens in (%d read from the cache), %d out\n",
			used, window, 100*float64(used)/float64(max(window, 1)), u.InputTokens, u.CacheReadTokens, u.OutputTokens))
	case "/compact":
		before, _ := c.agent.ContextUsage()
		if err := c.agent.Compact(ctx); err != nil {
			c.print(fmt.Sprintf("/compact: %v\n", err))
			return false
		}
		after, window := c.agent.ContextUsage()
		c.saveSession()
		c.print(fmt.Sprintf("compacted: %d tokens, from %d, of %d\n", after, before, window))
	case "/image":
		if arg == "" {
			c.print("/image needs a file: /image PATH\n")
			return false
		}
		img, err := llm.ImageFile(arg)
		if err != nil {
			c.print(fmt.Sprintf("/image: %v\n", err))
			return false
		}
		c.images = append(c.images, img)
		c.print(fmt.Sprintf("%s (%s, %d bytes) goes with the next question\n", textsafe.Name(arg), img.MediaType, len(img.Data)))
	case "/sessions":
		list, err := c.store.list()
		if err != nil {
			c.print(fmt.Sprintf("/sessions: %v\n", err))
			return false
		}
		if len(list) == 0 {
			c.print("no saved conversation\n")
		}
		for _, sess := range list {
			mark := " "
			if sess.name == c.name {
				mark = "*"
			}
			first := ""
			if st, ok, err := c.store.load(sess.name); ok && err == nil {
				first = firstQuestion(st.Messages)
			}
			c.print(fmt.Sprintf("%s %-24s %s  %s\n", mark, sess.name, sess.modified.Format("2006-01-02 15:04"), first))
		}
	case "/system":
		if arg == "" {
			c.print("system prompt: " + c.agent.SystemPrompt() + "\n")
			return false
		}
		c.agent.SetSystemPrompt(arg)
		c.print("system prompt set\n")
	default:
		c.print("unknown command " + cmd + "; " + slashHelp + "\n")
	}
	return false
}

// short is the first line of s, cut to max runes. It is quoted
// (textsafe.Name) when it holds a control character, so that a tool's
// result or a model's arguments can neither paint the terminal nor forge
// a line of the session.
func short(s string, max int) string {
	s = strings.TrimSpace(s)
	first, _, more := strings.Cut(s, "\n")
	if utf8.RuneCountInString(first) > max {
		return textsafe.Name(string([]rune(first)[:max-1])) + "…"
	}
	if more {
		return textsafe.Name(first) + " …"
	}
	return textsafe.Name(first)
}
