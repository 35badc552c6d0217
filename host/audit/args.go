package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/toolcall"
)

// maxDepth bounds the nesting of the arguments that a record keeps: a
// value nested deeper is recorded as "[nested too deep]".
const maxDepth = 32

// maxNumber bounds a number's text; a longer one is recorded as a string,
// cut.
const maxNumber = 64

// boundArgs is what a record keeps of a call's arguments (see
// Record.Args): secrets redacted, long strings cut, the whole bounded.
func boundArgs(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := copyValue(dec, &b, 0)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("text after the value")
		}
	}
	if err != nil {
		b.Reset()
		writeString(&b, "[arguments that are not JSON: "+strconv.Itoa(len(raw))+" bytes]")
		return b.Bytes()
	}
	if b.Len() <= MaxArgs {
		return b.Bytes()
	}
	text := toolcall.Bound(b.String(), MaxArgs)
	b.Reset()
	writeString(&b, text)
	return b.Bytes()
}

// copyValue copies the next value of dec to b, redacted and bounded.
func copyValue(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	if depth >= maxDepth {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
		writeString(b, "[nested too deep]")
		return nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		return copyContainer(dec, b, t, depth)
	case string:
		writeString(b, redactText(toolcall.Bound(t, MaxString)))
	case json.Number:
		if len(t) > maxNumber {
			writeString(b, toolcall.Bound(string(t), maxNumber))
		} else {
			b.WriteString(string(t))
		}
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// copyContainer copies the object or array that open begins.
func copyContainer(dec *json.Decoder, b *bytes.Buffer, open json.Delim, depth int) error {
	b.WriteByte(byte(open))
	for first := true; dec.More(); first = false {
		if !first {
			b.WriteByte(',')
		}
		if open == '[' {
			if err := copyValue(dec, b, depth+1); err != nil {
				return err
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		writeString(b, toolcall.Bound(key, MaxString))
		b.WriteByte(':')
		if !secretKey(key) {
			if err := copyValue(dec, b, depth+1); err != nil {
				return err
			}
			continue
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
		writeString(b, Redacted)
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return err
	}
	if open == '{' {
		b.WriteByte('}')
	} else {
		b.WriteByte(']')
	}
	return nil
}

// writeString writes s to b as a JSON string, leaving <, > and & as they
// are. Bytes that are not UTF-8 become U+FFFD.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20 || c == 0x7f:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// secretWords are the words of a key (split at separators and case
// changes, lowercased) that say its value is a secret; two words in a
// row count as one as well ("api", "key": apikey).
var secretWords = map[string]bool{
	"token": true, "secret": true, "secrets": true, "password": true, "passwd": true,
	"passphrase": true, "pwd": true, "auth": true, "oauth": true, "authorization": true,
	"credential": true, "credentials": true, "cookie": true, "cookies": true,
	"apikey": true, "privatekey": true, "accesskey": true, "sessionkey": true,
	"secretkey": true, "bearer": true,
}

// secretKey reports whether a value under key is a secret: token,
// GITHUB_TOKEN, apiKey, X-Api-Key, client_secret, Authorization... but not
// max_tokens or author.
func secretKey(key string) bool {
	var prev string
	for w := range keyWords(key) {
		if secretWords[w] || prev != "" && secretWords[prev+w] {
			return true
		}
		prev = w
	}
	return false
}

// keyWords yields the words of key, lowercased: "X-Api-Key", "x_api_key"
// and "xAPIKey" are all x, api, key.
func keyWords(key string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		start := -1
		var prev rune
		for i, r := range key {
			alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
			boundary := !alnum
			if alnum && start >= 0 && unicode.IsUpper(r) {
				// fooBar; APIKey: a word starts at K.
				boundary = !unicode.IsUpper(prev) ||
					nextIsLower(key[i+utf8.RuneLen(r):])
			}
			if boundary && start >= 0 {
				if !yield(strings.ToLower(key[start:i])) {
					return
				}
				start = -1
			}
			if alnum && start < 0 {
				start = i
			}
			prev = r
		}
		if start >= 0 {
			yield(strings.ToLower(key[start:]))
		}
	}
}

func nextIsLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLower(r)
}

var (
	// bearerToken is "Bearer TOKEN" anywhere.
	bearerToken = regexp.MustCompile(`(?i)\b(bearer)[ \t]+[A-Za-z0-9._~+/=-]+`)
	// urlPassword is the password of a URL's user information.
	urlPassword = regexp.MustCompile(`(://[^/\s:@]*):[^/\s@]+@`)
	// keyValue is KEY=VALUE, KEY: VALUE, "KEY": "VALUE", --KEY VALUE.
	keyValue = regexp.MustCompile(`(--)?([A-Za-z][A-Za-z0-9_.-]*)("?[ \t]*[=:][ \t]*|[ \t]+)("[^"]*"|'[^']*'|(?i:(?:bearer|basic|token)[ \t]+)?[^\s&;,'"]+)`)
)

// secretHints are in every text that redactText changes (lowercased):
// a secret's name, or a URL.
var secretHints = []string{"token", "secret", "pass", "pwd", "auth", "key", "cookie", "credential", "bearer", "://"}

// mentionsSecret reports whether s holds one of secretHints, in any case.
func mentionsSecret(s string) bool {
	lower := strings.ToLower(s)
	for _, h := range secretHints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// redactText redacts the secrets that a string shows: "Bearer TOKEN", a
// URL's password, and the value of KEY=VALUE (KEY: VALUE, --KEY VALUE)
// whose KEY names a secret.
func redactText(s string) string {
	if !strings.ContainsAny(s, "=: \t") || !mentionsSecret(s) {
		return s
	}
	s = bearerToken.ReplaceAllString(s, "$1 "+Redacted)
	s = urlPassword.ReplaceAllString(s, "$1:"+Redacted+"@")
	var b strings.Builder
	done := 0 // s[:done] is in b
	for at := 0; at < len(s); {
		m := keyValue.FindStringSubmatchIndex(s[at:])
		if m == nil {
			break
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += at
			}
		}
		flag := m[2] >= 0
		key, sep, value := s[m[4]:m[5]], s[m[6]:m[7]], s[m[8]:m[9]]
		// KEY VALUE is a flag's only: --password x, not "the password x".
		// The value of a key that is no secret may hold KEY=VALUE
		// (url=https://h/?token=x): the search goes on inside it.
		if !flag && strings.TrimSpace(sep) == "" || !secretKey(key) || strings.Trim(value, `"'`) == Redacted {
			at = m[8]
			continue
		}
		b.WriteString(s[done:m[8]])
		if q := value[0]; q == '"' || q == '\'' {
			b.WriteByte(q)
			b.WriteString(Redacted)
			b.WriteByte(q)
		} else {
			b.WriteString(Redacted)
		}
		done, at = m[9], m[9]
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}
