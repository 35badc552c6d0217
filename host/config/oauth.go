package config

import (
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/host"
)

// oauthKeys are the keys of an mcpServers entry's oauth object, named as
// Claude Code names those it shares (clientId, callbackPort, scopes).
var oauthKeys = []string{"clientId", "clientSecret", "scopes", "clientMetadataUrl", "callbackPort"}

// oauth reads an mcpServers entry's oauth object: the client the host
// logs in as, the scopes it asks for, the port of its redirect.
func (l *loader) oauth(v *jsonValue, path string) (host.MCPOAuth, error) {
	var o host.MCPOAuth
	members, err := l.object(v, path, oauthKeys, nil)
	if err != nil {
		return o, err
	}
	at := map[string]*jsonValue{}
	for _, m := range members {
		at[m.name] = m.value
		p := path + "." + m.name
		switch m.name {
		case "clientId":
			o.ClientID, err = l.nonEmpty(m.value, p)
		case "clientSecret":
			o.ClientSecret, err = l.nonEmpty(m.value, p)
		case "scopes":
			o.Scopes, err = l.scopes(m.value, p)
		case "clientMetadataUrl":
			if o.ClientMetadataURL, err = l.nonEmpty(m.value, p); err == nil {
				if u, perr := url.Parse(o.ClientMetadataURL); perr != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
					err = l.errorf(m.value.line, p, "%q: want an https URL with a path (the client ID metadata document's)", o.ClientMetadataURL)
				}
			}
		case "callbackPort":
			if o.CallbackPort, err = l.integer(m.value, p); err == nil && (o.CallbackPort < 1 || o.CallbackPort > 65535) {
				err = l.errorf(m.value.line, p, "%d: want a port from 1 to 65535", o.CallbackPort)
			}
		}
		if err != nil {
			return o, err
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return o, l.errorf(at["clientSecret"].line, path+".clientSecret", "goes with clientId, which is missing")
	}
	return o, nil
}

// scopes reads OAuth scopes: an array of strings, or one string of
// scopes separated by spaces (as Claude Code writes them).
func (l *loader) scopes(v *jsonValue, path string) ([]string, error) {
	var scopes []string
	if v.kind == jsonString {
		scopes = strings.Fields(v.text)
	} else {
		list, err := l.strs(v, path)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			scopes = append(scopes, strings.Fields(s)...)
		}
	}
	if len(scopes) == 0 {
		return nil, l.errorf(v.line, path, "no scope given (leave the key out to ask for the scopes the server names)")
	}
	return scopes, nil
}
