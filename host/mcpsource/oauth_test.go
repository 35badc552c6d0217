package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/oauthtest"
)

// The OAuth tests run an authorization server and the MCP server it
// protects (internal/oauthtest) on loopback addresses, and play the
// browser by following the authorization URL, as a user's browser does
// when the user approves.

// newOAuth is the OAuth side of the server "srv", with its tokens in a
// directory of the test.
func newOAuth(t *testing.T) *OAuth {
	return &OAuth{Server: "srv", Tokens: &Tokens{Dir: filepath.Join(t.TempDir(), "tokens")}}
}

// browse is a show func that plays the browser, and counts its calls.
func browse(t *testing.T, shown *atomic.Int32) func(string) {
	return func(authURL string) {
		shown.Add(1)
		go func() {
			if err := oauthtest.Browse(authURL); err != nil {
				t.Errorf("the browser: %v", err)
			}
		}()
	}
}

// login logs in to the server at u.
func login(t *testing.T, u string, o *OAuth) *LoginResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var shown atomic.Int32
	res, err := Login(ctx, u, strings.HasSuffix(u, "/sse"), nil, o, browse(t, &shown))
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	return res
}

// callWhoami connects over t and calls the server's tool.
func callWhoami(t *testing.T, tr mcp.Transport) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := Connect(ctx, tr, Options{})
	if err != nil {
		return "", err
	}
	defer s.Close()
	if _, err := s.Tools(ctx); err != nil {
		return "", err
	}
	text, _, err := s.Call(ctx, "whoami", json.RawMessage(`{}`))
	return text, err
}

// authError is err's *AuthError, or a failure of the test.
func authError(t *testing.T, err error) *AuthError {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want an *AuthError", err)
	}
	return ae
}

// storedGrant is what the token file holds.
func storedGrant(t *testing.T, o *OAuth, u string) *grant {
	t.Helper()
	g, err := o.Tokens.load(u)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// noTokenIn fails the test if text quotes one of the tokens the
// authorization server issued.
func noTokenIn(t *testing.T, text string) {
	t.Helper()
	if strings.Contains(text, "access-") || strings.Contains(text, "refresh-") {
		t.Errorf("a token is quoted: %s", text)
	}
}

// A server that asks for a login is refused with the command to run; the
// login discovers the authorization server from the refusal, registers
// the host, sends the browser with PKCE (S256), the state and the
// resource, takes the redirect on 127.0.0.1 and stores the token, 0600;
// the session then uses it. Logout removes it.
func TestOAuthLogin(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{Scopes: []string{"mcp:tools"}})
	o := newOAuth(t)

	_, err := callWhoami(t, HTTPAuth(as.URL, nil, o))
	ae := authError(t, err)
	if !ae.Login || !strings.Contains(err.Error(), "run `agenthost mcp login srv`") {
		t.Fatalf("the refusal says %q; want the login command", err)
	}
	if g := storedGrant(t, o, as.URL); g == nil || g.AccessToken != "" || !strings.Contains(g.Challenge, "resource_metadata=") {
		t.Fatalf("the refusal stored %+v; want its challenge, for the login", g)
	}

	res := login(t, as.URL, o)
	regs, auths, exchanges, _ := as.Counts()
	if regs != 1 || auths != 1 || exchanges != 1 {
		t.Fatalf("registrations, authorizations, exchanges = %d, %d, %d; want one each", regs, auths, exchanges)
	}
	q := as.Authorizations()[0]
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	if redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" || redirect.Port() == "" {
		t.Errorf("redirect_uri %s; want http://127.0.0.1:PORT/callback", redirect)
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("resource") != as.URL || q.Get("scope") != "mcp:tools" {
		t.Errorf("authorization request %v; want S256, a state, the resource %s and the scope mcp:tools", q, as.URL)
	}
	if f := as.TokenForms()[0]; f.Get("resource") != as.URL || f.Get("code_verifier") == "" {
		t.Errorf("token request %v; want the resource and the code verifier", f)
	}
	info, err := os.Stat(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the token file is %v; want 0600", info.Mode().Perm())
	}
	if dir, _ := os.Stat(filepath.Dir(res.File)); dir.Mode().Perm() != 0o700 {
		t.Errorf("the token directory is %v; want 0700", dir.Mode().Perm())
	}
	if !res.Renewable || !slices.Equal(res.Scopes, []string{"mcp:tools"}) {
		t.Errorf("login result %+v; want renewable, scope mcp:tools", res)
	}
	g := storedGrant(t, o, as.URL)
	if g.ClientID != "client-1" || g.ClientSecret != "secret-1" || g.Challenge != "" {
		t.Errorf("stored %+v; want the registered client, and no challenge left", g)
	}

	text, err := callWhoami(t, HTTPAuth(as.URL, nil, o))
	if err != nil || text != "an authorized client" {
		t.Fatalf("after the login: %q, %v", text, err)
	}
	if seen := as.Seen(); seen[len(seen)-1] != g.AccessToken {
		t.Errorf("the server saw %v; want the stored token", seen)
	}

	removed, file, err := Logout(as.URL, o)
	if err != nil || !removed || file != res.File {
		t.Fatalf("Logout: %v, %s, %v", removed, file, err)
	}
	if _, err := os.Stat(res.File); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token file is still there: %v", err)
	}
	_, err = callWhoami(t, HTTPAuth(as.URL, nil, o))
	if !authError(t, err).Login {
		t.Fatalf("after the logout: %v", err)
	}
	if removed, _, _ := Logout(as.URL, o); removed {
		t.Error("a second logout removed something")
	}
}

// The older SSE transport is logged in to and authorized alike.
func TestOAuthSSE(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	o := newOAuth(t)
	_, err := callWhoami(t, SSEAuth(as.SSEURL, nil, o))
	if !authError(t, err).Login {
		t.Fatalf("before the login: %v", err)
	}
	login(t, as.SSEURL, o)
	if text, err := callWhoami(t, SSEAuth(as.SSEURL, nil, o)); err != nil || text != "an authorized client" {
		t.Fatalf("after the login: %q, %v", text, err)
	}
}

// A token about to expire is renewed with the refresh token before it is
// used, and one the server refuses before its expiry is renewed on the
// refusal; the file keeps the rotated refresh token. A refresh the
// authorization server refuses says to log in again, without quoting a
// token, even one the authorization server's answer quotes.
func TestOAuthRefresh(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	o := newOAuth(t)
	login(t, as.URL, o)
	first := storedGrant(t, o, as.URL)
	// An hour later, it expires within renewBefore: renewed before the
	// first request.
	first.Issued, first.Expiry = first.Issued.Add(-time.Hour), time.Now().Add(renewBefore-time.Second)
	if err := o.Tokens.update(t.Context(), as.URL, func(*grant) (*grant, error) { return first, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := callWhoami(t, HTTPAuth(as.URL, nil, o)); err != nil {
		t.Fatal(err)
	}
	second := storedGrant(t, o, as.URL)
	if _, _, _, refreshes := as.Counts(); refreshes == 0 {
		t.Fatal("no refresh before expiry")
	}
	if second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
		t.Fatalf("the file holds %+v after the refresh; want the new tokens", second)
	}
	if slices.Contains(as.Seen(), first.AccessToken) {
		t.Error("the expiring token was sent")
	}

	as2 := oauthtest.New(t, oauthtest.Options{})
	o2 := newOAuth(t)
	login(t, as2.URL, o2)
	before := storedGrant(t, o2, as2.URL)
	as2.Revoke()
	if _, err := callWhoami(t, HTTPAuth(as2.URL, nil, o2)); err != nil {
		t.Fatalf("a refused token was not renewed: %v", err)
	}
	if after := storedGrant(t, o2, as2.URL); after.AccessToken == before.AccessToken {
		t.Fatal("the refused token is still stored")
	}

	as2.RevokeRefresh()
	_, err := callWhoami(t, HTTPAuth(as2.URL, nil, o2))
	ae := authError(t, err)
	if !ae.Login || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("a refused refresh says %q; want invalid_grant and the login command", err)
	}
	noTokenIn(t, err.Error())
}

// A server that asks for more scopes than the token grants (403
// insufficient_scope) is refused with the command to run, and the next
// login asks for the scopes granted and those asked for; a server that
// refuses a token that grants what it asks for is not sent to a login
// that would change nothing.
func TestOAuthStepUp(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{Scopes: []string{"mcp:read"}, CallScopes: []string{"mcp:write"}})
	o := newOAuth(t)
	login(t, as.URL, o)
	_, err := callWhoami(t, HTTPAuth(as.URL, nil, o))
	ae := authError(t, err)
	if !ae.Login || !slices.Equal(ae.Scopes, []string{"mcp:read", "mcp:write"}) || !strings.Contains(err.Error(), "mcp:read mcp:write") {
		t.Fatalf("the step-up says %q (%v)", err, ae.Scopes)
	}
	login(t, as.URL, o)
	if got := strings.Fields(as.Authorizations()[1].Get("scope")); len(got) != 2 || !slices.Contains(got, "mcp:read") || !slices.Contains(got, "mcp:write") {
		t.Fatalf("the second login asked for %q; want mcp:read mcp:write", got)
	}
	if _, err := callWhoami(t, HTTPAuth(as.URL, nil, o)); err != nil {
		t.Fatalf("after the step-up: %v", err)
	}

	// The token grants the scopes, and the server still refuses it.
	never := oauthtest.New(t, oauthtest.Options{Scopes: []string{"mcp:admin"}, CallScopes: []string{"mcp:admin"}})
	o2 := newOAuth(t)
	login(t, never.URL, o2)
	g := storedGrant(t, o2, never.URL)
	never.Revoke() // and everything else it has
	err = o2.Tokens.update(t.Context(), never.URL, func(*grant) (*grant, error) { return g, nil })
	if err != nil {
		t.Fatal(err)
	}
	h := newSessionAuth(never.URL, o2)
	req := httptest.NewRequest(http.MethodPost, never.URL, nil)
	req.Header.Set("Authorization", "Bearer "+g.AccessToken)
	resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: http.NoBody}
	resp.Header.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:admin"`)
	h.g = g
	err = h.Authorize(t.Context(), req, resp)
	if ae := authError(t, err); ae.Login || strings.Contains(err.Error(), "agenthost mcp login") {
		t.Fatalf("a refusal of what the token grants says %q; want no login", err)
	}
}

// A redirect whose state is not the login's is refused, and the login
// waits on: its code is never exchanged.
func TestOAuthStateMismatch(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	o := newOAuth(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	forged := make(chan int, 1)
	show := func(authURL string) {
		go func() {
			u, _ := url.Parse(authURL)
			q := u.Query()
			cb, _ := url.Parse(q.Get("redirect_uri"))
			cb.RawQuery = url.Values{"code": {"forged-code"}, "state": {"not-" + q.Get("state")}}.Encode()
			resp, err := http.Get(cb.String())
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			forged <- resp.StatusCode
			if err := oauthtest.Browse(authURL); err != nil {
				t.Error(err)
			}
		}()
	}
	if _, err := Login(ctx, as.URL, false, nil, o, show); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if status := <-forged; status != http.StatusBadRequest {
		t.Errorf("the forged redirect got %d; want 400", status)
	}
	for _, f := range as.TokenForms() {
		if f.Get("code") == "forged-code" {
			t.Fatal("the forged code was exchanged")
		}
	}
}

// Logins that must fail, before any browser opens: an authorization
// server named over plain http off loopback, a resource on another
// origin, endpoints over plain http, a redirect to another origin, an
// answer too large. Each error says what happened
// and quotes no token.
func TestOAuthHostileMetadata(t *testing.T) {
	var evilHits atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evilHits.Add(1)
		fmt.Fprint(w, `{}`)
	}))
	defer evil.Close()

	cases := []struct {
		name string
		opts oauthtest.Options
		want string
	}{
		{"http issuer", oauthtest.Options{Resource: func(m map[string]any) {
			m["authorization_servers"] = []string{"http://auth.example.com"}
		}}, "neither https nor on a loopback address"},
		{"resource elsewhere", oauthtest.Options{Resource: func(m map[string]any) {
			m["resource"] = "https://evil.example.com/mcp"
		}}, "resource on another origin"},
		{"http endpoints", oauthtest.Options{Metadata: func(m map[string]any) {
			m["authorization_endpoint"] = "http://auth.example.com/authorize"
		}}, "authorization_endpoint"},
		{"redirect to another host", oauthtest.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
			if strings.HasPrefix(r.URL.Path, "/.well-known/") {
				http.Redirect(w, r, evil.URL+r.URL.Path, http.StatusFound)
				return true
			}
			return false
		}}, "another origin"},
		{"oversized metadata", oauthtest.Options{Metadata: func(m map[string]any) {
			m["op_policy_uri"] = "https://example.com/" + strings.Repeat("x", 300<<10)
		}}, "over 256 KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			as := oauthtest.New(t, c.opts)
			o := newOAuth(t)
			var shown atomic.Int32
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := Login(ctx, as.URL, false, nil, o, browse(t, &shown))
			if err == nil {
				t.Fatal("the login succeeded")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "logging in to srv: ") {
				t.Errorf("error %q; want it to say %q", err, c.want)
			}
			if shown.Load() != 0 {
				t.Error("the browser was sent to the authorization page")
			}
			if g := storedGrant(t, o, as.URL); g != nil && g.AccessToken != "" {
				t.Error("a token was stored")
			}
			noTokenIn(t, err.Error())
		})
	}
	if evilHits.Load() != 0 {
		t.Errorf("the other host got %d requests", evilHits.Load())
	}
}

// The token endpoint's answer is bounded too, and a code exchange that
// fails says why without quoting the answer's body.
func TestOAuthOversizedToken(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/token" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"access-big","token_type":"Bearer","pad":%q}`, strings.Repeat("x", 1<<20))
		return true
	}})
	o := newOAuth(t)
	var shown atomic.Int32
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := Login(ctx, as.URL, false, nil, o, browse(t, &shown))
	if err == nil || !strings.Contains(err.Error(), "over 256 KiB") {
		t.Fatalf("Login: %v; want the answer refused as too large", err)
	}
	noTokenIn(t, err.Error())
}

// A login to a server that does not ask for one says so; a server whose
// authorization server offers no registration asks for a client ID.
func TestOAuthNothingToLogInTo(t *testing.T) {
	open := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	}, nil))
	defer open.Close()
	var shown atomic.Int32
	_, err := Login(t.Context(), open.URL, false, nil, newOAuth(t), browse(t, &shown))
	if err == nil || !strings.Contains(err.Error(), "does not use OAuth") {
		t.Fatalf("Login to an open server: %v", err)
	}
	// An open SSE server's stream is not waited on.
	openSSE := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	}, nil))
	defer openSSE.Close()
	start := time.Now()
	_, err = Login(t.Context(), openSSE.URL, true, nil, newOAuth(t), browse(t, &shown))
	if err == nil || !strings.Contains(err.Error(), "does not use OAuth") || time.Since(start) > 5*time.Second {
		t.Fatalf("Login to an open SSE server: %v after %s", err, time.Since(start))
	}

	as := oauthtest.New(t, oauthtest.Options{ClientID: "registered", ClientSecret: "s3cret"})
	_, err = Login(t.Context(), as.URL, false, nil, newOAuth(t), browse(t, &shown))
	if err == nil || !strings.Contains(err.Error(), "oauth.clientId") {
		t.Fatalf("Login without a way to register: %v", err)
	}
	if shown.Load() != 0 {
		t.Error("the browser was sent to the authorization page")
	}

	// With the client registered beforehand, it works, and the configured
	// secret is not written to the token file.
	o := newOAuth(t)
	o.ClientID, o.ClientSecret = "registered", "s3cret"
	res := login(t, as.URL, o)
	data, err := os.ReadFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "s3cret") {
		t.Error("the configured client secret was written to the token file")
	}
	as.Revoke()
	if _, err := callWhoami(t, HTTPAuth(as.URL, nil, o)); err != nil {
		t.Fatalf("renewing with the configured secret: %v", err)
	}
}

// Two processes that renew the same expiring token at once (two handlers,
// each with its own descriptor of the file) make one refresh, under the
// file's lock: the second takes the first's token, and the rotated
// refresh token is not lost.
func TestOAuthConcurrentRenewal(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	o := newOAuth(t)
	login(t, as.URL, o)
	g := storedGrant(t, o, as.URL)
	g.Issued, g.Expiry = g.Issued.Add(-time.Hour), time.Now().Add(time.Second)
	if err := o.Tokens.update(t.Context(), as.URL, func(*grant) (*grant, error) { return g, nil }); err != nil {
		t.Fatal(err)
	}
	a, b := newSessionAuth(as.URL, o), newSessionAuth(as.URL, o)
	for _, h := range []*sessionAuth{a, b} {
		if _, err := h.TokenSource(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	tokens := make(chan string, 2)
	for _, h := range []*sessionAuth{a, b} {
		go func() {
			tok, err := h.Token()
			if err != nil {
				t.Error(err)
				tokens <- ""
				return
			}
			tokens <- tok.AccessToken
		}()
	}
	first, second := <-tokens, <-tokens
	if first == "" || first != second || first == g.AccessToken {
		t.Fatalf("the two renewals got %q and %q; want one new token", first, second)
	}
	if _, _, _, refreshes := as.Counts(); refreshes != 1 {
		t.Errorf("%d refreshes; want 1", refreshes)
	}
	if stored := storedGrant(t, o, as.URL); stored.AccessToken != first || stored.RefreshToken == g.RefreshToken {
		t.Errorf("the file holds %+v; want the new token and refresh token", stored)
	}
}

// A server that redirects a request to another origin does not take the
// token there.
func TestOAuthTokenStaysOnItsOrigin(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			leaked.Store(a)
		}
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer evil.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	u := redirector.URL + "/mcp"
	o := newOAuth(t)
	g := &grant{AccessToken: "access-secret", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}
	if err := o.Tokens.update(t.Context(), u, func(*grant) (*grant, error) { return g, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := callWhoami(t, HTTPAuth(u, nil, o)); err == nil {
		t.Fatal("the session worked")
	}
	if a := leaked.Load().(string); a != "" {
		t.Fatalf("the other origin got %q", a)
	}
}
