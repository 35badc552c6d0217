// Package oauthtest is an OAuth 2.1 authorization server and an MCP
// server whose endpoint it protects, on loopback addresses, for the tests
// of the host's OAuth client (host/mcpsource, agenthost mcp login): it
// publishes its metadata (RFC 9728, RFC 8414), registers clients
// (RFC 7591), checks PKCE (S256), the redirect URI and the resource
// indicator (RFC 8707), issues tokens that expire and rotating refresh
// tokens, and refuses what it should, with the WWW-Authenticate headers
// of MCP's authorization. It counts what it was asked, for the tests to
// check.
package oauthtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options shape the servers.
type Options struct {
	// ExpiresIn is the access tokens' lifetime; zero means an hour.
	ExpiresIn time.Duration
	// NoRefresh issues no refresh tokens.
	NoRefresh bool
	// Scopes are the scopes the MCP endpoint asks for (WWW-Authenticate's
	// scope, and the protected resource metadata's scopes_supported).
	Scopes []string
	// CallScopes are the scopes a tools/call needs beyond Scopes: a
	// token without them is refused with 403 insufficient_scope (step-up).
	CallScopes []string
	// ClientID and ClientSecret, when set, are the only client, and the
	// authorization server offers no registration.
	ClientID, ClientSecret string
	// Hook, when set, sees every request to the authorization server
	// first, and answers it itself by returning true.
	Hook func(w http.ResponseWriter, r *http.Request) bool
	// Metadata, when set, changes the authorization server's metadata.
	Metadata func(m map[string]any)
	// Resource, when set, changes the protected resource metadata.
	Resource func(m map[string]any)
}

// Server is the authorization server (AS) and the MCP server (MCP).
type Server struct {
	AS, MCP *httptest.Server
	// URL is the MCP endpoint (streamable HTTP); SSEURL the SSE one.
	URL, SSEURL string

	opts Options
	mu   sync.Mutex
	n    int
	// clients are the registered clients: their secret and redirect
	// URIs.
	clients map[string]client
	codes   map[string]code
	access  map[string]token
	refresh map[string]token

	registrations, authorizations, exchanges, refreshes int
	authorize                                           []url.Values
	forms                                               []url.Values
	seen                                                []string
}

type client struct {
	secret    string
	redirects []string
}

type code struct {
	client, redirect, challenge, resource string
	scopes                                []string
}

type token struct {
	client  string
	scopes  []string
	expires time.Time
}

// New starts the servers; they stop when the test ends.
func New(t testing.TB, opts Options) *Server {
	s := &Server{opts: opts, clients: map[string]client{}, codes: map[string]code{}, access: map[string]token{}, refresh: map[string]token{}}
	if opts.ClientID != "" {
		s.clients[opts.ClientID] = client{secret: opts.ClientSecret}
	}
	s.AS = httptest.NewServer(http.HandlerFunc(s.serveAS))
	t.Cleanup(s.AS.Close)

	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "says who called"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "an authorized client"}}}, struct{}{}, nil
	})
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	sse := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.protect("/mcp", streamable))
	mux.Handle("/sse", s.protect("/sse", sse))
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.resourceMetadata("/mcp"))
	mux.HandleFunc("/.well-known/oauth-protected-resource/sse", s.resourceMetadata("/sse"))
	s.MCP = httptest.NewServer(mux)
	t.Cleanup(s.MCP.Close)
	s.URL, s.SSEURL = s.MCP.URL+"/mcp", s.MCP.URL+"/sse"
	return s
}

// resourceMetadata serves the protected resource metadata of path.
func (s *Server) resourceMetadata(path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m := map[string]any{"resource": s.MCP.URL + path, "authorization_servers": []string{s.AS.URL}}
		if len(s.opts.Scopes) > 0 {
			m["scopes_supported"] = s.opts.Scopes
		}
		if s.opts.Resource != nil {
			s.opts.Resource(m)
		}
		writeJSON(w, http.StatusOK, m)
	}
}

// protect lets through the requests with a token the authorization server
// issued and that has not expired, with the scopes they need.
func (s *Server) protect(path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		challenge := fmt.Sprintf("Bearer resource_metadata=%q", s.MCP.URL+"/.well-known/oauth-protected-resource"+path)
		if len(s.opts.Scopes) > 0 {
			challenge += fmt.Sprintf(", scope=%q", strings.Join(s.opts.Scopes, " "))
		}
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		s.seen = append(s.seen, bearer)
		tok, known := s.access[bearer]
		s.mu.Unlock()
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		case !known || time.Now().After(tok.expires):
			w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		if len(s.opts.CallScopes) > 0 && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			need := append(slices.Clone(s.opts.Scopes), s.opts.CallScopes...)
			if msg.Method == "tools/call" && !containsAll(tok.scopes, need) {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer error=\"insufficient_scope\", scope=%q, resource_metadata=%q", strings.Join(need, " "), s.MCP.URL+"/.well-known/oauth-protected-resource"+path))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) serveAS(w http.ResponseWriter, r *http.Request) {
	if s.opts.Hook != nil && s.opts.Hook(w, r) {
		return
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		m := map[string]any{
			"issuer":                                s.AS.URL,
			"authorization_endpoint":                s.AS.URL + "/authorize",
			"token_endpoint":                        s.AS.URL + "/token",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		}
		if s.opts.ClientID == "" {
			m["registration_endpoint"] = s.AS.URL + "/register"
		}
		if s.opts.Metadata != nil {
			s.opts.Metadata(m)
		}
		writeJSON(w, http.StatusOK, m)
	case "/register":
		s.register(w, r)
	case "/authorize":
		s.authorizeCode(w, r)
	case "/token":
		s.issue(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if s.opts.ClientID != "" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var meta struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		GrantTypes   []string `json:"grant_types"`
	}
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	s.mu.Lock()
	s.n++
	s.registrations++
	id := fmt.Sprintf("client-%d", s.n)
	c := client{redirects: meta.RedirectURIs}
	out := map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"}
	if meta.AuthMethod != "none" {
		c.secret = fmt.Sprintf("secret-%d", s.n)
		out["client_secret"], out["token_endpoint_auth_method"] = c.secret, "client_secret_basic"
	}
	s.clients[id] = c
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, out)
}

// authorizeCode is the authorization endpoint of a user who approves at
// once: it redirects to the client's redirect URI with a code.
func (s *Server) authorizeCode(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorizations++
	s.authorize = append(s.authorize, q)
	c, ok := s.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case s.opts.ClientID == "" && !slices.Contains(c.redirects, redirect):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE with S256 is required", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	}
	s.n++
	k := fmt.Sprintf("code-%d", s.n)
	s.codes[k] = code{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
	u, err := url.Parse(redirect)
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := u.Query()
	v.Set("code", k)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// issue is the token endpoint: authorization_code with PKCE, and
// refresh_token (rotated).
func (s *Server) issue(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forms = append(s.forms, f)
	c, ok := s.clients[id]
	if !ok || c.secret != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var scopes []string
	switch f.Get("grant_type") {
	case "authorization_code":
		s.exchanges++
		cd, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok || cd.client != id:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown code"})
			return
		case cd.redirect != f.Get("redirect_uri"):
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "redirect_uri differs"})
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != cd.challenge:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "code_verifier does not match"})
			return
		case f.Get("resource") != cd.resource:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
			return
		}
		scopes = cd.scopes
	case "refresh_token":
		s.refreshes++
		rt, ok := s.refresh[f.Get("refresh_token")]
		delete(s.refresh, f.Get("refresh_token"))
		if !ok || rt.client != id {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token " + f.Get("refresh_token") + " is not valid"})
			return
		}
		scopes = rt.scopes
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	life := s.opts.ExpiresIn
	if life == 0 {
		life = time.Hour
	}
	s.n++
	at := fmt.Sprintf("access-%d", s.n)
	s.access[at] = token{client: id, scopes: scopes, expires: time.Now().Add(life)}
	out := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(life / time.Second)}
	if len(scopes) > 0 {
		out["scope"] = strings.Join(scopes, " ")
	}
	if !s.opts.NoRefresh {
		rt := fmt.Sprintf("refresh-%d", s.n)
		s.refresh[rt] = token{client: id, scopes: scopes}
		out["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, out)
}

// Browse plays a browser: it loads authURL and follows its redirects,
// back to the client's redirect URI.
func Browse(authURL string) error {
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%s: %s: %s", resp.Request.URL.Redacted(), resp.Status, body)
	}
	return nil
}

// Revoke makes every access token invalid, as an authorization server
// does when it revokes them before they expire.
func (s *Server) Revoke() {
	s.mu.Lock()
	clear(s.access)
	s.mu.Unlock()
}

// RevokeRefresh makes every refresh token invalid too.
func (s *Server) RevokeRefresh() {
	s.mu.Lock()
	clear(s.access)
	clear(s.refresh)
	s.mu.Unlock()
}

// Counts are how many registrations, authorization requests, code
// exchanges and refreshes the authorization server answered.
func (s *Server) Counts() (registrations, authorizations, exchanges, refreshes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registrations, s.authorizations, s.exchanges, s.refreshes
}

// Authorizations are the authorization requests' parameters, in order.
func (s *Server) Authorizations() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authorize)
}

// TokenForms are the token requests' forms, in order.
func (s *Server) TokenForms() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.forms)
}

// Seen are the bearer tokens of the requests to the MCP server, in order
// ("" for none).
func (s *Server) Seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
