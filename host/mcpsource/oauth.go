package mcpsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// OAuth is the OAuth 2.1 side of a remote server (MCP's authorization):
// who the host logs in as, what it asks for, where the token is kept.
//
// Login runs the authorization code flow, in a browser, and stores the
// token; a session (HTTPAuth, SSEAuth) only uses the stored token,
// renewing it with its refresh token before it expires, or when the
// server refuses it. It never opens a browser: a server that wants a
// login, or more scopes than the token grants, fails the request with an
// *AuthError that names LoginCommand.
type OAuth struct {
	// Server is the server's name, in messages.
	Server string
	// LoginCommand is the command that logs in to the server, named by
	// errors: "agenthost mcp login SERVER" when empty.
	LoginCommand string

	// ClientID and ClientSecret are a client registered with the
	// server's authorization server beforehand; without a ClientID the
	// host registers itself (dynamic client registration), or names
	// ClientMetadataURL as its client ID where the authorization server
	// accepts client ID metadata documents. ClientSecret may be empty (a
	// public client).
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// that describes the host as a client, used where the authorization
	// server supports them, before ClientID and registration.
	ClientMetadataURL string
	// Scopes are the scopes to ask for; empty means those the server
	// names (in its challenge, else in its metadata), or none.
	Scopes []string
	// CallbackPort is the port of the loopback redirect
	// (http://127.0.0.1:PORT/callback); zero picks a free one. A client
	// registered beforehand needs the port it was registered with.
	CallbackPort int

	// Tokens keeps the tokens; nil means DefaultTokens.
	Tokens *Tokens
}

// loginCommand is the command that logs in to the server.
func (o *OAuth) loginCommand() string {
	if o.LoginCommand != "" {
		return o.LoginCommand
	}
	return "agenthost mcp login " + o.Server
}

// tokens is where the tokens are kept.
func (o *OAuth) tokens() (*Tokens, error) {
	if o.Tokens != nil {
		return o.Tokens, nil
	}
	return DefaultTokens()
}

// HTTPAuth is HTTP with OAuth: requests carry the token Login stored for
// url, renewed as it expires; one the server refuses for want of a login
// fails with an *AuthError. A nil o is HTTP.
func HTTPAuth(url string, headers map[string]string, o *OAuth) mcp.Transport {
	if o == nil {
		return HTTP(url, headers)
	}
	t := HTTP(url, headers)
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		st.OAuthHandler = newSessionAuth(url, o)
		keepTokenOnOrigin(st.HTTPClient)
	}
	return t
}

// SSEAuth is SSE with OAuth, as HTTPAuth is HTTP with OAuth. A nil o is
// SSE.
func SSEAuth(endpoint string, headers map[string]string, o *OAuth) mcp.Transport {
	if o == nil {
		return SSE(endpoint, headers)
	}
	t := SSE(endpoint, headers)
	if st, ok := t.(*sseTransport); ok {
		c := st.HTTPClient
		// Inside the origin check: the token goes to the endpoint's
		// origin only.
		if so, ok := c.Transport.(*sameOrigin); ok {
			so.base = &bearer{base: so.base, h: newSessionAuth(endpoint, o)}
		}
		keepTokenOnOrigin(c)
	}
	return t
}

// keepTokenOnOrigin has c drop the Authorization header from a redirect
// to another origin than the request's.
func keepTokenOnOrigin(c *http.Client) {
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if !sameOriginURL(req.URL, via[0].URL) {
			req.Header.Del("Authorization")
		}
		return nil
	}
}

func sameOriginURL(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// AuthError is a request a remote server refused for want of
// authorization: no token is stored for it, its token was refused and
// could not be renewed, or it asks for more scopes than the token grants.
// Its message says what to do; it never quotes a token.
type AuthError struct {
	// Server is the server's name.
	Server string
	// Login reports whether logging in (again) may help.
	Login bool
	// Scopes are the scopes the server asked for, if it said.
	Scopes []string
	msg    string
}

func (e *AuthError) Error() string { return e.msg }

// sessionAuth is the OAuth handler of a session (auth.OAuthHandler): it
// hands out the stored token, renews it, and turns a refusal into an
// *AuthError. It never runs the authorization flow.
type sessionAuth struct {
	o   *OAuth
	url string

	mu sync.Mutex
	g  *grant // the grant in use; nil until one is loaded
	// renewedFor is the token a refusal renewed: refused again, it is not
	// renewed again.
	renewedFor string
}

var (
	_ auth.OAuthHandler  = (*sessionAuth)(nil)
	_ oauth2.TokenSource = (*sessionAuth)(nil)
)

func newSessionAuth(url string, o *OAuth) *sessionAuth {
	return &sessionAuth{o: o, url: url}
}

// renewBefore is how long before its expiry a token is renewed; one that
// lives less than twice as long is renewed halfway through its life.
const renewBefore = 30 * time.Second

// oauthTimeout bounds one request to an authorization server.
const oauthTimeout = 30 * time.Second

// fresh reports whether g holds a token that is not about to expire.
func fresh(g *grant) bool {
	switch {
	case g == nil || g.AccessToken == "":
		return false
	case g.Expiry.IsZero():
		return true
	}
	margin := renewBefore
	if !g.Issued.IsZero() {
		margin = min(margin, g.Expiry.Sub(g.Issued)/2)
	}
	return time.Until(g.Expiry) > margin
}

// TokenSource is the handler itself once a token is stored, nil before:
// requests then go without one.
func (h *sessionAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.g == nil || h.g.AccessToken == "" {
		// A login since the last look (by another process) counts.
		if err := h.reload(); err != nil {
			return nil, err
		}
	}
	if h.g == nil || h.g.AccessToken == "" {
		return nil, nil
	}
	return h, nil
}

// reload reads the stored grant.
func (h *sessionAuth) reload() error {
	tokens, err := h.o.tokens()
	if err != nil {
		return err
	}
	g, err := tokens.load(h.url)
	if err != nil {
		return fmt.Errorf("reading the OAuth token of %s: %w", textsafe.Name(h.o.Server), err)
	}
	h.g = g
	return nil
}

// Token is the stored token, renewed first when it is about to expire.
func (h *sessionAuth) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if fresh(h.g) {
		return h.g.token(), nil
	}
	stale := ""
	if h.g != nil {
		stale = h.g.AccessToken
	}
	ctx, cancel := context.WithTimeout(context.Background(), oauthTimeout+5*time.Second)
	defer cancel()
	if err := h.renew(ctx, stale); err != nil {
		return nil, err
	}
	return h.g.token(), nil
}

// renew replaces the token stale with a new one: another process's, if
// it renewed it first, else one the refresh token gets.
func (h *sessionAuth) renew(ctx context.Context, stale string) error {
	tokens, err := h.o.tokens()
	if err != nil {
		return err
	}
	var out *grant
	var failed error
	err = tokens.update(ctx, h.url, func(cur *grant) (*grant, error) {
		switch {
		case cur == nil || cur.AccessToken == "":
			failed = h.needLogin("asks for an OAuth login, and no token is stored for it")
			return nil, nil
		case cur.AccessToken != stale && fresh(cur):
			out = cur
			return nil, nil
		case cur.RefreshToken == "":
			failed = h.needLogin("refused its OAuth token, which has expired or been revoked, and there is no refresh token to renew it")
			return nil, nil
		}
		cctx := context.WithValue(ctx, oauth2.HTTPClient, oauthHTTPClient())
		tok, err := h.config(cur).TokenSource(cctx, &oauth2.Token{RefreshToken: cur.RefreshToken}).Token()
		if err != nil {
			failed = h.renewError(err)
			return nil, nil
		}
		cur.setToken(tok)
		out = cur
		return cur, nil
	})
	if err != nil {
		return fmt.Errorf("renewing the OAuth token of %s: %w", textsafe.Name(h.o.Server), err)
	}
	if failed != nil {
		return failed
	}
	h.g = out
	return nil
}

// config is the OAuth client of g's token, for its renewal.
func (h *sessionAuth) config(g *grant) *oauth2.Config {
	secret := g.ClientSecret
	if secret == "" && h.o.ClientID != "" && g.ClientID == h.o.ClientID {
		secret = h.o.ClientSecret
	}
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: secret, Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
}

// renewError words a refresh that failed, without what the authorization
// server's answer may quote.
func (h *sessionAuth) renewError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		what := fmt.Sprintf("HTTP %d", statusOf(re.Response))
		if re.ErrorCode != "" {
			what = textsafe.Name(cutTo(re.ErrorCode, 100))
		}
		return h.needLogin("refused its OAuth token, and the authorization server refused to renew it (" + what + ")")
	}
	return &AuthError{Server: h.o.Server, msg: fmt.Sprintf("renewing the OAuth token of %s failed: %s", textsafe.Name(h.o.Server), cut(oauthCause(err)))}
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// needLogin is an *AuthError that says to log in.
func (h *sessionAuth) needLogin(what string) *AuthError {
	return &AuthError{Server: h.o.Server, Login: true, msg: fmt.Sprintf("%s %s: run `%s`", textsafe.Name(h.o.Server), what, h.o.loginCommand())}
}

// Authorize is called for a request the server refused (401 or 403). A
// refused token is renewed, and the request sent again; a token another
// process stored since is taken up. Otherwise the refusal is an
// *AuthError, and what the server asked for is stored for the next
// login.
func (h *sessionAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	header := resp.Header.Values("WWW-Authenticate")
	challenges, _ := oauthex.ParseWWWAuthenticate(header)
	var scopes []string
	code := ""
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			scopes, code = strings.Fields(c.Params["scope"]), c.Params["error"]
			break
		}
	}
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	name := textsafe.Name(h.o.Server)

	h.mu.Lock()
	defer h.mu.Unlock()
	if resp.StatusCode == http.StatusForbidden && code != "insufficient_scope" {
		return &AuthError{Server: h.o.Server, msg: fmt.Sprintf("%s refused the request: HTTP 403 Forbidden", name)}
	}
	if resp.StatusCode == http.StatusForbidden {
		if h.g != nil && len(scopes) > 0 && h.g.grants(scopes) {
			return &AuthError{Server: h.o.Server, Scopes: scopes, msg: fmt.Sprintf("%s refused its OAuth token although the token grants the scopes it asks for (%s); logging in again would not change that", name, quoteScopes(scopes))}
		}
		want := scopes
		if h.g != nil {
			want = union(h.g.Scopes, scopes)
		}
		h.remember(ctx, header, want)
		e := h.needLogin(fmt.Sprintf("asks for more than its OAuth token grants (%s)", quoteScopes(scopes)))
		e.Scopes = scopes
		e.msg += " to grant it"
		return e
	}
	if sent != "" && sent != h.renewedFor {
		err := h.renew(ctx, sent)
		if err == nil {
			h.renewedFor = h.g.AccessToken
			return nil
		}
		var ae *AuthError
		if !errors.As(err, &ae) || !ae.Login {
			return err
		}
		h.remember(ctx, header, scopes)
		ae.Scopes = scopes
		return ae
	} else if sent == "" {
		// A login since the request was sent (by another process) counts.
		if err := h.reload(); err == nil && fresh(h.g) {
			return nil
		}
	}
	h.remember(ctx, header, scopes)
	var e *AuthError
	if sent == "" {
		e = h.needLogin("asks for an OAuth login")
	} else {
		e = h.needLogin("refused its OAuth token")
	}
	e.Scopes = scopes
	return e
}

// remember stores what a refusal asked for, for the next login.
func (h *sessionAuth) remember(ctx context.Context, header []string, scopes []string) {
	challenge := cutTo(strings.Join(header, ", "), 4<<10)
	tokens, err := h.o.tokens()
	if err != nil {
		return
	}
	_ = tokens.update(ctx, h.url, func(cur *grant) (*grant, error) {
		if cur == nil {
			cur = &grant{}
		}
		if cur.Challenge == challenge && slices.Equal(cur.Wanted, scopes) {
			return nil, nil
		}
		cur.Challenge, cur.Wanted = challenge, scopes
		return cur, nil
	})
}

// quoteScopes lists scopes for a message.
func quoteScopes(scopes []string) string {
	if len(scopes) == 0 {
		return "no scope named"
	}
	return "scope " + textsafe.Name(cutTo(strings.Join(scopes, " "), 500))
}

// union is a's scopes, then those of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// bearer gives the requests of an SSE session their token as the
// streamable HTTP transport does with its OAuth handler: on a refusal
// (401 or 403) the handler's Authorize is asked, and the request sent
// again once if it returns nil.
type bearer struct {
	base http.RoundTripper
	h    auth.OAuthHandler
}

var _ http.RoundTripper = (*bearer)(nil)

func (t *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	send := func(body io.ReadCloser) (*http.Request, *http.Response, error) {
		r := req.Clone(req.Context())
		r.Body = body
		ts, err := t.h.TokenSource(req.Context())
		if err != nil {
			return nil, nil, err
		}
		if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				return nil, nil, err
			}
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := t.base.RoundTrip(r)
		return r, resp, err
	}
	r, resp, err := send(req.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, nil
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // it cannot be sent again
	}
	if err := t.h.Authorize(req.Context(), r, resp); err != nil {
		return nil, err
	}
	var body io.ReadCloser
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	_, resp, err = send(body)
	return resp, err
}

// maxOAuthAnswer bounds an answer of an authorization server, or of a
// server's metadata: they are small JSON documents.
const maxOAuthAnswer = 256 << 10

// oauthHTTPClient is the client of the requests OAuth makes besides MCP's:
// metadata, registration, tokens. Each request has oauthTimeout, an
// answer at most maxOAuthAnswer bytes, and a redirect is followed only on
// its origin.
func oauthHTTPClient() *http.Client {
	return &http.Client{
		Timeout:   oauthTimeout,
		Transport: &capBodies{base: http.DefaultTransport.(*http.Transport).Clone(), max: maxOAuthAnswer},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if from := via[len(via)-1].URL; !sameOriginURL(req.URL, from) {
				return fmt.Errorf("%s redirected to another origin, %s: refused", textsafe.Name(origin(from)), textsafe.Name(origin(req.URL)))
			}
			return nil
		},
	}
}

// origin is u's scheme, host and port.
func origin(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// capBodies bounds the answers' bodies.
type capBodies struct {
	base http.RoundTripper
	max  int64
}

func (t *capBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		resp.Body = &capped{ReadCloser: resp.Body, left: t.max, from: origin(req.URL)}
	}
	return resp, err
}

// capped is a body that fails past its bound.
type capped struct {
	io.ReadCloser
	left int64
	from string
}

// TooLargeError is an answer of an authorization server, or of a
// server's OAuth metadata, over its bound.
type TooLargeError struct {
	From  string // the origin that sent it
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the answer of %s is over %d KiB: refused", textsafe.Name(e.From), e.Limit>>10)
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, &TooLargeError{From: c.from, Limit: maxOAuthAnswer}
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), &TooLargeError{From: c.from, Limit: maxOAuthAnswer}
	}
	return n, err
}

// oauthCause words err, from an OAuth request, without what an
// authorization server's answer quotes.
func oauthCause(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("the authorization server answered HTTP %d", statusOf(re.Response))
		if re.ErrorCode != "" {
			msg += " " + textsafe.Name(cutTo(re.ErrorCode, 100))
			if re.ErrorDescription != "" {
				msg += ": " + textsafe.Name(cutTo(re.ErrorDescription, 300))
			}
		}
		return msg
	}
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return tooLarge.Error()
	}
	return err.Error()
}
