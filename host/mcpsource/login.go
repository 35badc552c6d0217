package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// LoginResult is what a login stored.
type LoginResult struct {
	// File is the token's file.
	File string
	// Scopes are the scopes granted (those asked for, when the
	// authorization server did not say).
	Scopes []string
	// Expiry is when the access token expires; zero when it did not say.
	Expiry time.Time
	// Renewable reports whether a refresh token came with it.
	Renewable bool
}

// Login runs OAuth 2.1's authorization code flow for the remote server at
// serverURL (sse: the older HTTP+SSE transport; headers are sent to it as
// a session sends them) and stores the token for its sessions.
//
// It asks the server as a client would (an initialize request, or the SSE
// stream), and from its refusal's WWW-Authenticate header, else from the
// refusal a session stored, else from the well-known locations, finds the
// protected resource metadata (RFC 9728) and the authorization server's
// metadata (RFC 8414 or OpenID Connect discovery, with the fallbacks of
// protocol version 2025-03-26). It takes the client from o: a client ID
// metadata document where the authorization server supports them, a
// client registered beforehand, else dynamic client registration
// (RFC 7591). It listens on 127.0.0.1 for the redirect, calls show with
// the authorization URL (PKCE with S256, a random state, the resource
// indicator of RFC 8707), and waits until the browser comes back with
// the state it was given (other requests are refused and the wait goes
// on) or ctx ends. The code is exchanged for the token, which is stored
// in o.Tokens, 0600.
//
// Requests to the authorization server time out after 30 s, an answer
// over 256 KiB is refused, a redirect is followed only on its origin, and
// every endpoint must be https or on a loopback address. Errors never
// quote a token.
func Login(ctx context.Context, serverURL string, sse bool, headers map[string]string, o *OAuth, show func(authURL string)) (*LoginResult, error) {
	name := textsafe.Name(o.Server)
	tokens, err := o.tokens()
	if err != nil {
		return nil, err
	}
	prior, _ := tokens.load(serverURL) // one that cannot be read is replaced
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.CallbackPort))
	if err != nil {
		return nil, fmt.Errorf("listening for the authorization's redirect on 127.0.0.1:%d: %w", o.CallbackPort, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)

	refusal, err := challengeOf(ctx, serverURL, sse, headers, prior, name)
	if err != nil {
		return nil, err
	}

	cb := &callback{results: make(chan callbackResult, 1), server: name}
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	client := oauthHTTPClient()
	var got struct {
		cfg      *oauth2.Config
		tok      *oauth2.Token
		resource string
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, err := url.Parse(args.URL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
				return nil, fmt.Errorf("the authorization URL %s is not an http(s) URL", textsafe.Name(cutTo(args.URL, 200)))
			}
			got.resource = u.Query().Get("resource")
			cb.expect(u.Query().Get("state"))
			show(args.URL)
			select {
			case r := <-cb.results:
				return r.result, r.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:  []string{redirect},
			ClientName:    "agenthost",
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		}},
		ScopeFilter: func(discovered []string) []string {
			scopes := discovered
			if len(o.Scopes) > 0 {
				scopes = o.Scopes
			}
			if prior != nil && len(prior.Wanted) > 0 {
				// More than granted was asked for: keep what was granted.
				scopes = union(union(scopes, prior.Scopes), prior.Wanted)
			}
			return scopes
		},
		RequestRefreshToken: true,
		Client:              client,
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = cfg, tok
			// Not a refreshing source: a refresh here would rotate away
			// the refresh token stored below.
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if o.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if o.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	if err := checkResourceMetadata(ctx, client, serverURL, refusal.Header.Values("WWW-Authenticate")); err != nil {
		return nil, fmt.Errorf("logging in to %s: %w", name, err)
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return nil, fmt.Errorf("the OAuth configuration of %s cannot be used: %w", name, err)
	}
	if err := h.Authorize(ctx, refusal.Request, refusal); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("logging in to %s: %s", name, loginCause(err))
	}
	if got.tok == nil {
		return nil, fmt.Errorf("logging in to %s: no token came back", name)
	}

	g := &grant{Resource: got.resource, ClientID: got.cfg.ClientID, TokenURL: got.cfg.Endpoint.TokenURL, AuthStyle: got.cfg.Endpoint.AuthStyle, Scopes: got.cfg.Scopes}
	if got.cfg.ClientID != o.ClientID {
		// A registration's secret; the configuration keeps its own.
		g.ClientSecret = got.cfg.ClientSecret
	}
	g.setToken(got.tok)
	// Stored even when the wait for the browser has just timed out: the
	// code is spent.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), oauthTimeout)
	defer cancel()
	if err := tokens.update(sctx, serverURL, func(*grant) (*grant, error) { return g, nil }); err != nil {
		return nil, fmt.Errorf("storing the token of %s: %w", name, err)
	}
	return &LoginResult{File: tokens.File(serverURL), Scopes: g.Scopes, Expiry: g.Expiry, Renewable: g.RefreshToken != ""}, nil
}

// Logout removes the token stored for serverURL, and reports whether
// there was one and the file it was in.
func Logout(serverURL string, o *OAuth) (removed bool, file string, err error) {
	tokens, err := o.tokens()
	if err != nil {
		return false, "", err
	}
	removed, err = tokens.Remove(serverURL)
	return removed, tokens.File(serverURL), err
}

// probeTimeout bounds the request that asks the server what it wants.
const probeTimeout = 30 * time.Second

// challengeOf is the refusal the login starts from: the server's answer
// to a request without a token, else the refusal a session stored, else,
// when the server publishes protected resource metadata, a refusal that
// says nothing (discovery then goes to the well-known locations).
func challengeOf(ctx context.Context, serverURL string, sse bool, headers map[string]string, prior *grant, name string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	client := headerClient(serverURL, headers)
	keepTokenOnOrigin(client)
	var req *http.Request
	var err error
	if sse {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, serverURL, nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
		}
	} else {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"agenthost","version":"login"}}}`, protocolVersion)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, serverURL, bytes.NewReader([]byte(body)))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", protocolVersion)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the url of %s cannot be used: %w", name, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s could not be reached: %w", name, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	}
	// An answer (an event stream, say) is not waited for.
	resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && !sse {
		// It opened a session without a login: it is closed again.
		if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, serverURL, nil); err == nil {
			del.Header.Set("Mcp-Session-Id", id)
			if r, err := client.Do(del); err == nil {
				r.Body.Close()
			}
		}
	}
	refusal := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		refusal.Header["Www-Authenticate"] = resp.Header.Values("WWW-Authenticate")
	case prior != nil && prior.Challenge != "":
		refusal.Header.Set("WWW-Authenticate", prior.Challenge)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if !publishesResourceMetadata(ctx, serverURL) {
			return nil, fmt.Errorf("%s answered without asking for a login, and publishes no OAuth metadata: it does not use OAuth", name)
		}
	default:
		return nil, fmt.Errorf("%s answered HTTP %d %s, not a request for a login: check its url", name, resp.StatusCode, textsafe.Name(http.StatusText(resp.StatusCode)))
	}
	return refusal, nil
}

// publishesResourceMetadata reports whether the server publishes
// protected resource metadata at a well-known location (RFC 9728): at
// its endpoint's path, or at its root.
func publishesResourceMetadata(ctx context.Context, serverURL string) bool {
	u, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	client := oauthHTTPClient()
	at := *u
	at.RawQuery, at.Fragment = "", ""
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	if prm, err := oauthex.GetProtectedResourceMetadata(ctx, at.String(), serverURL, client); err == nil && prm != nil {
		return true
	}
	at.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, at.String(), root.String(), client)
	return err == nil && prm != nil
}

// checkResourceMetadata refuses the protected resource metadata the login
// would find first (RFC 9728: the challenge's resource_metadata, else the
// well-known location at the endpoint's path, else at the root) when it
// names a resource on another origin than the server, or an
// authorization server that is neither https nor on a loopback address. A login that went on
// would fall back to the older protocol's discovery, at the server
// itself, and fail there with words that do not say why.
func checkResourceMetadata(ctx context.Context, client *http.Client, serverURL string, challenge []string) error {
	u, err := url.Parse(serverURL)
	if err != nil {
		return err
	}
	var candidates []string
	challenges, _ := oauthex.ParseWWWAuthenticate(challenge)
	for _, c := range challenges {
		if m := c.Params["resource_metadata"]; m != "" {
			candidates = append(candidates, m)
			break
		}
	}
	at := *u
	at.RawQuery, at.Fragment = "", ""
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	candidates = append(candidates, at.String())
	at.Path = "/.well-known/oauth-protected-resource"
	candidates = append(candidates, at.String())
	for _, c := range candidates {
		m, err := url.Parse(c)
		if err != nil || !httpsOrLoopback(m) {
			return fmt.Errorf("the protected resource metadata URL %s is neither https nor on a loopback address: refused", textsafe.Name(cutTo(c, 200)))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c, nil)
		if err != nil {
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		var prm oauthex.ProtectedResourceMetadata
		err = json.NewDecoder(resp.Body).Decode(&prm)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			continue
		}
		if r, err := url.Parse(prm.Resource); err != nil || !sameOriginURL(r, u) {
			return fmt.Errorf("its protected resource metadata (%s) is for a resource on another origin, %s, not %s: refused", textsafe.Name(cutTo(c, 200)), textsafe.Name(cutTo(prm.Resource, 200)), textsafe.Name(origin(u)))
		}
		for _, s := range prm.AuthorizationServers {
			if a, err := url.Parse(s); err != nil || !httpsOrLoopback(a) {
				return fmt.Errorf("its protected resource metadata names the authorization server %s, which is neither https nor on a loopback address: refused", textsafe.Name(cutTo(s, 200)))
			}
		}
		return nil
	}
	return nil
}

// httpsOrLoopback reports whether u is an https URL, or an http one on a
// loopback address.
func httpsOrLoopback(u *url.URL) bool {
	switch u.Scheme {
	case "https":
		return u.Host != ""
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// loginCause words a failed authorization without what an authorization
// server's answer may quote, with what to do where there is something.
func loginCause(err error) string {
	msg := oauthCause(err)
	if strings.Contains(msg, "no configured client registration methods") {
		return "its authorization server offers no registration agenthost can use (neither dynamic client registration nor client ID metadata documents): register a client there, and set its ID (and secret) as oauth.clientId (and oauth.clientSecret) in the server's entry"
	}
	// On one line: the authorization server's words may hold newlines.
	return cut(strings.Join(strings.Fields(msg), " "))
}

// callback receives the browser's redirect on the loopback address.
type callback struct {
	server  string
	mu      sync.Mutex
	state   string
	results chan callbackResult
}

type callbackResult struct {
	result *auth.AuthorizationResult
	err    error
}

// expect sets the state the redirect must carry.
func (c *callback) expect(state string) {
	c.mu.Lock()
	c.state = state
	c.mu.Unlock()
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.URL.Path != "/callback" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	c.mu.Lock()
	state := c.state
	c.mu.Unlock()
	if state == "" || q.Get("state") != state {
		// Not the redirect of this login: it waits on.
		w.WriteHeader(http.StatusBadRequest)
		page(w, "This is not the redirect agenthost is waiting for (its state does not match). Nothing was done.")
		return
	}
	var res callbackResult
	switch {
	case q.Get("error") != "":
		msg := "the authorization server refused: " + textsafe.Name(cutTo(q.Get("error"), 100))
		if d := q.Get("error_description"); d != "" {
			msg += " (" + textsafe.Name(cutTo(d, 300)) + ")"
		}
		res.err = errors.New(msg)
		w.WriteHeader(http.StatusForbidden)
		page(w, "The authorization of "+c.server+" failed: "+msg+". You can close this page.")
	case q.Get("code") == "":
		w.WriteHeader(http.StatusBadRequest)
		page(w, "The redirect carries no authorization code. Nothing was done.")
		return
	default:
		res.result = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		page(w, "agenthost is authorized to use "+c.server+". You can close this page.")
	}
	select {
	case c.results <- res:
	default: // one was delivered already
	}
}

// page writes a page that says msg.
func page(w io.Writer, msg string) {
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>agenthost</title><p>%s</p>\n", html.EscapeString(msg))
}
