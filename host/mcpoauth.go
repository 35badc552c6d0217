package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agenthost/agenthost/host/mcpsource"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// MCPOAuth is the OAuth 2.1 configuration of a server over HTTP
// (MCPServer.OAuth): the mcpServers entry's "oauth" key. Its zero value
// suits a server whose authorization server lets clients register
// themselves.
type MCPOAuth struct {
	// ClientID and ClientSecret are a client registered with the
	// server's authorization server beforehand, for one that does not let
	// clients register themselves. ClientSecret may name environment
	// variables as ${VAR}, as the entry's other values do.
	ClientID, ClientSecret string
	// Scopes are the scopes to ask for; empty means those the server
	// names.
	Scopes []string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// describing the host as a client, used where the authorization
	// server supports them.
	ClientMetadataURL string
	// CallbackPort is the port of the login's loopback redirect,
	// http://127.0.0.1:PORT/callback; zero picks a free one.
	CallbackPort int
}

// oauth is the OAuth side of the server's sessions, for a server over
// HTTP without an Authorization header of its own; nil otherwise.
func (s *MCPServer) oauth() *mcpsource.OAuth {
	if s.transport() == "stdio" {
		return nil
	}
	for k := range s.Headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return nil
		}
	}
	o := s.OAuth
	return &mcpsource.OAuth{
		Server:            s.Name,
		LoginCommand:      "agenthost mcp login " + textsafe.Name(s.Name),
		ClientID:          o.ClientID,
		ClientSecret:      o.ClientSecret,
		ClientMetadataURL: o.ClientMetadataURL,
		Scopes:            o.Scopes,
		CallbackPort:      o.CallbackPort,
	}
}

// remoteOAuth is the server, expanded, and its OAuth side, for Login and
// Logout.
func (s *MCPServer) remoteOAuth() (MCPServer, *mcpsource.OAuth, error) {
	if s.transport() == "stdio" {
		return MCPServer{}, nil, fmt.Errorf("%s is a stdio server: OAuth is for servers over HTTP", textsafe.Name(s.Name))
	}
	x, err := s.expanded()
	if err != nil {
		return MCPServer{}, nil, err
	}
	o := x.oauth()
	if o == nil {
		return MCPServer{}, nil, fmt.Errorf("%s sends an Authorization header of its own (its headers): remove it to log in with OAuth", textsafe.Name(s.Name))
	}
	return x, o, nil
}

// Login runs the OAuth login of a server over HTTP (agenthost mcp login
// NAME; see mcpsource.Login): show gets the authorization URL, to open
// in a browser, and Login waits until the browser comes back or ctx
// ends. The token is stored for the server's sessions.
func (s *MCPServer) Login(ctx context.Context, show func(authURL string)) (*mcpsource.LoginResult, error) {
	x, o, err := s.remoteOAuth()
	if err != nil {
		return nil, err
	}
	return mcpsource.Login(ctx, x.URL, x.transport() == "sse", x.Headers, o, show)
}

// Logout removes the OAuth token stored for a server over HTTP, and
// reports whether there was one and the file that held it.
func (s *MCPServer) Logout() (removed bool, file string, err error) {
	x, o, err := s.remoteOAuth()
	if err != nil {
		return false, "", err
	}
	return mcpsource.Logout(x.URL, o)
}

// mcpAuthError is err's refusal for want of authorization, if it is one.
func mcpAuthError(err error) (*mcpsource.AuthError, bool) {
	var ae *mcpsource.AuthError
	ok := errors.As(err, &ae)
	return ae, ok
}
