package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"

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
	_ sdk.Titler        = checkedTool{}
	_ toolcall.Preparer = checkedTool{}
)

// checked wraps a typed tool of this plugin.
func checked(t sdk.Tool) sdk.Tool { return checkedTool{tool: t} }

func (c checkedTool) Name() string                 { return c.tool.Name() }
func (c checkedTool) Schema() sdk.ChatTool         { return c.tool.Schema() }
func (c checkedTool) Annotations() sdk.Annotations { return sdk.AnnotationsOf(c.tool) }
func (c checkedTool) Title() string                { return sdk.TitleOf(c.tool) }

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
// bytes, or a \u escape of half a surrogate pair: toolcall.CheckUnicode,
// with a word on base64 for content) or an integer outside int64, quoted
// exactly as sent. Its errors start with "invalid arguments: ", in the
// sdk's words. Arguments that are not a JSON object are left to the
// schema check.
func checkArgs(args json.RawMessage) error {
	if err := toolcall.CheckUnicode(args); err != nil {
		if strings.Contains(err.Error(), `argument "content" `) {
			return fmt.Errorf("%w: to write bytes, send them base64-encoded with encoding \"base64\"", err)
		}
		return err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(args, &fields) != nil {
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[key]
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			if err := checkNumber(key, string(raw)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNumber refuses a JSON number that is not an integer an int64
// holds, naming the argument and quoting the number as sent (decoding
// would round it).
func checkNumber(name, text string) error {
	f, ok := new(big.Float).SetPrec(200).SetString(text)
	if !ok || !f.IsInt() {
		return nil // not a number, or a fraction: the schema check says so
	}
	if i, _ := f.Int(nil); !i.IsInt64() {
		return fmt.Errorf("invalid arguments: %s: must be an integer from %d to %d, not %s",
			textsafe.Name(name), math.MinInt64, math.MaxInt64, toolcall.Bound(text, toolcall.MaxQuoted))
	}
	return nil
}
