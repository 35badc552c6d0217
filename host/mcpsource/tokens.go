package mcpsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/internal/atomicfile"
)

// TokenDir is where Tokens keeps its files under the user's configuration
// directory (os.UserConfigDir): agenthost/tokens.
const TokenDir = "agenthost/tokens"

// maxTokenFile bounds a token file.
const maxTokenFile = 64 << 10

// Tokens is the directory that keeps the OAuth tokens of remote servers:
// one file per server URL, readable by the user alone (0600, in a 0700
// directory), replaced whole on every change so that a reader never sees
// half of one, and changed under the file's lock so that two processes
// refreshing a token at once do not lose either's refresh token. A file
// holds the access and refresh tokens, the client they were issued to
// (with the secret a dynamic registration issued), the token endpoint and
// the scopes granted; a client secret from the configuration is never
// written there.
type Tokens struct {
	// Dir is the directory.
	Dir string
}

// DefaultTokens is the user's token directory: TokenDir in
// os.UserConfigDir ($XDG_CONFIG_HOME/agenthost/tokens or
// ~/.config/agenthost/tokens on Linux).
func DefaultTokens() (*Tokens, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("finding the directory for OAuth tokens: %w", err)
	}
	return &Tokens{Dir: filepath.Join(dir, filepath.FromSlash(TokenDir))}, nil
}

// File is the path of the file that holds serverURL's token.
func (t *Tokens) File(serverURL string) string {
	return filepath.Join(t.Dir, tokenFileName(serverURL))
}

// Remove deletes serverURL's file, and reports whether it held a token
// (rather than only what the server last asked for).
func (t *Tokens) Remove(serverURL string) (bool, error) {
	g, _ := t.load(serverURL)
	err := os.Remove(t.File(serverURL))
	switch {
	case err == nil:
		return g != nil && g.AccessToken != "", nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// tokenFileName is the name of serverURL's file: a hash of the URL with
// its scheme and host in lower case and without a fragment, so that the
// name says nothing of the server and no URL can name another file.
func tokenFileName(serverURL string) string {
	sum := sha256.Sum256([]byte(canonicalURL(serverURL)))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// canonicalURL is serverURL as the token store keys it.
func canonicalURL(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return serverURL
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// grant is what a token file holds: the server's token and how to renew
// it, or only what the server last asked for (Challenge, Wanted) when
// no login has happened since.
type grant struct {
	// Server is the server's URL, as canonicalURL writes it.
	Server string `json:"server"`
	// Resource is the resource the token was issued for (RFC 8707).
	Resource string `json:"resource,omitempty"`

	// ClientID is the client the token was issued to; ClientSecret its
	// secret when a dynamic registration issued one (a configured
	// secret stays in the configuration).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// TokenURL and AuthStyle are the token endpoint and how the client
	// authenticates there (oauth2.AuthStyle).
	TokenURL  string           `json:"tokenUrl,omitempty"`
	AuthStyle oauth2.AuthStyle `json:"authStyle,omitempty"`
	// Scopes are the scopes granted.
	Scopes []string `json:"scopes,omitempty"`

	AccessToken  string    `json:"accessToken,omitempty"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Issued is when the token came.
	Issued time.Time `json:"issued,omitzero"`

	// Challenge is the WWW-Authenticate header of the server's last
	// refusal since the login, and Wanted the scopes it asked for there:
	// the next login starts from them.
	Challenge string   `json:"challenge,omitempty"`
	Wanted    []string `json:"wantedScopes,omitempty"`
}

// token is the grant's token, for oauth2.
func (g *grant) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: g.AccessToken, TokenType: g.TokenType, RefreshToken: g.RefreshToken, Expiry: g.Expiry}
}

// setToken keeps tok, and the scopes it says were granted, if it says.
func (g *grant) setToken(tok *oauth2.Token) {
	g.AccessToken, g.TokenType, g.Expiry, g.Issued = tok.AccessToken, tok.TokenType, tok.Expiry, time.Now()
	if tok.RefreshToken != "" {
		g.RefreshToken = tok.RefreshToken
	}
	if s, ok := tok.Extra("scope").(string); ok {
		g.Scopes = strings.Fields(s)
	}
}

// grants reports whether every scope of want is granted.
func (g *grant) grants(want []string) bool {
	for _, s := range want {
		if !slices.Contains(g.Scopes, s) {
			return false
		}
	}
	return true
}

// load reads serverURL's grant: nil when there is none.
func (t *Tokens) load(serverURL string) (*grant, error) {
	root, err := os.OpenRoot(t.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := tokenFileName(serverURL)
	info, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("the token file %s is not a regular file", filepath.Join(t.Dir, name))
	}
	data, err := root.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return t.decode(name, serverURL, data)
}

// decode reads a token file's content: nil for an empty one.
func (t *Tokens) decode(name, serverURL string, data []byte) (*grant, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) > maxTokenFile {
		return nil, fmt.Errorf("the token file %s is over %d KiB: run agenthost mcp logout and log in again", filepath.Join(t.Dir, name), maxTokenFile>>10)
	}
	var g grant
	if err := json.Unmarshal(data, &g); err != nil {
		// The error is about the syntax: it quotes no token.
		return nil, fmt.Errorf("the token file %s cannot be read (log in again): it is not the JSON agenthost writes", filepath.Join(t.Dir, name))
	}
	if g.Server != canonicalURL(serverURL) {
		return nil, nil
	}
	return &g, nil
}

// update changes serverURL's grant under its file's lock: change gets
// the grant the file holds now (nil when none) and returns the grant to
// write, or nil to leave the file as it is.
func (t *Tokens) update(ctx context.Context, serverURL string, change func(*grant) (*grant, error)) error {
	if err := os.MkdirAll(t.Dir, 0o700); err != nil {
		return fmt.Errorf("making the token directory: %w", err)
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	name := tokenFileName(serverURL)
	// The file must exist to be locked: an empty one stands for none.
	if f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	l, err := atomicfile.Lock(ctx, root, name)
	if err != nil {
		return fmt.Errorf("locking the token file %s: %w", filepath.Join(t.Dir, name), err)
	}
	defer l.Unlock()
	if info, err := l.Info(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("the token file %s is not a regular file", filepath.Join(t.Dir, name))
	}
	data, err := l.Read(maxTokenFile)
	if err != nil {
		return err
	}
	old, err := t.decode(name, serverURL, data)
	if err != nil {
		old = nil // a file that cannot be read is replaced
	}
	g, err := change(old)
	if err != nil || g == nil {
		return err
	}
	g.Server = canonicalURL(serverURL)
	out, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	// Written even when ctx has ended: a refresh token the authorization
	// server rotated is only in this grant now.
	if _, err := atomicfile.WriteFile(context.WithoutCancel(ctx), root, name, append(out, '\n'), atomicfile.Options{Perm: 0o600, Base: l}); err != nil {
		return fmt.Errorf("writing the token file %s: %w", filepath.Join(t.Dir, name), err)
	}
	// A file some other program loosened is tightened again.
	return root.Chmod(name, 0o600)
}
