package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
	"github.com/agenthost/agenthost/sdk"
)

// checkedTool is an fs tool whose raw arguments are checked before they
// are decoded, for what JSON decoding would hide: text that is not
// UTF-8 (decoding turns it into U+FFFD, so a path would name another
// file and content would be written changed) and numbers that no integer
// holds (decoding would fail in Go's words).
type checkedTool struct {
	tool sdk.Tool
}

var (
	_ sdk.Tool          = checkedTool{}
	_ sdk.Annotator     = checkedTool{}
	_ toolcall.Preparer = checkedTool{}
)

// checked wraps a typed tool of this plugin.
func checked(t sdk.Tool) sdk.Tool { return checkedTool{tool: t} }

func (c checkedTool) Name() string                 { return c.tool.Name() }
func (c checkedTool) Schema() sdk.ChatTool         { return c.tool.Schema() }
func (c checkedTool) Annotations() sdk.Annotations { return sdk.AnnotationsOf(c.tool) }

func (c checkedTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	args = sdk.NormalizeArgs(args)
	if err := checkArgs(args); err != nil {
		return "", err
	}
	return c.tool.Execute(ctx, args)
}

func (c checkedTool) PrepareCall(args json.RawMessage) (toolcall.Func, error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	return c.tool.(toolcall.Preparer).PrepareCall(args)
}

// checkArgs refuses arguments that hold text that is not UTF-8 (raw
// bytes, or a \u escape of half a surrogate pair) or an integer outside
// int64. Its errors start with "invalid arguments: ", as the schema
// check's do. Arguments that are not a JSON object are left to that
// check.
func checkArgs(args json.RawMessage) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(args, &fields) != nil {
		if !utf8.Valid(args) {
			return errors.New("invalid arguments: not valid UTF-8 text")
		}
		return nil
	}
	bad := !utf8.Valid(args) || hasLoneSurrogate(args)
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[key]
		if len(raw) == 0 {
			continue
		}
		if bad && (!utf8.Valid(raw) || hasLoneSurrogate(raw)) {
			return notUTF8(key)
		}
		if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
			if err := checkNumber(key, string(raw)); err != nil {
				return err
			}
		}
	}
	if bad {
		return errors.New("invalid arguments: not valid UTF-8 text (in an argument's name)")
	}
	return nil
}

// notUTF8 is the error for the argument name whose text is not UTF-8.
func notUTF8(name string) error {
	switch name {
	case "content":
		return fmt.Errorf("invalid arguments: content is not valid UTF-8 text: to write bytes, send them base64-encoded with encoding \"base64\"")
	case "path", "source", "destination":
		return fmt.Errorf("invalid arguments: %s is not valid UTF-8: a path must be UTF-8 text; a name that is not cannot be given", name)
	}
	return fmt.Errorf("invalid arguments: %s is not valid UTF-8 text", textsafe.Name(name))
}

// checkNumber refuses a JSON number that is not an integer an int64
// holds, naming the argument.
func checkNumber(name, text string) error {
	f, ok := new(big.Float).SetPrec(200).SetString(text)
	if !ok {
		return nil // not a number: the schema check says so
	}
	if !f.IsInt() {
		return nil // a fraction: the schema check refuses it
	}
	i, _ := f.Int(nil)
	if !i.IsInt64() {
		return fmt.Errorf("invalid arguments: %s is %s: it must be a whole number from %d to %d", name, shorten(text), math.MinInt64, math.MaxInt64)
	}
	return nil
}

// shorten cuts a long number for an error message.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// hasLoneSurrogate reports whether JSON text holds a \u escape of a
// surrogate that is not part of a pair: decoding turns it into U+FFFD.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 >= len(raw) {
			return false
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character, maybe a backslash
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			i++
			continue
		}
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if r2, ok := hex4(raw, i+8); ok && r2 >= 0xdc00 && r2 < 0xe000 {
					i += 11
					continue
				}
			}
			return true
		case r >= 0xdc00 && r < 0xe000:
			return true
		}
		i += 5
	}
	return false
}

// hex4 reads four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
