package sdk

import (
	"context"
	"strings"
	"testing"
)

// Argument checks name the argument and say what it must be, in JSON's
// words, with what the model sent quoted only in part.
func TestArgumentErrorsSpeakJSON(t *testing.T) {
	t.Parallel()
	tool := NewTool(Info{Name: "t"}, func(context.Context, fuzzInput) (string, error) { return "ran", nil })
	long := strings.Repeat("k", 100)
	tests := map[string]struct{ args, want string }{
		"null":                  {`{"path":null}`, `path: type: null has type "null", want "string"`},
		"null item":             {`{"path":"a","paths":[null]}`, `paths[]: type: null has type "null", want "string"`},
		"nested null":           {`{"path":"a","nested":{"depth":null}}`, `nested.depth: type: null has type "null", want "integer"`},
		"object for a string":   {`{"path":{"a":1}}`, `path: type: {…} has type "object", want "string"`},
		"array for a string":    {`{"path":[1]}`, `path: type: […] has type "array", want "string"`},
		"long string for int":   {`{"path":"a","limit":"` + long + `"}`, `limit: type: "` + strings.Repeat("k", 64) + `…" (100 bytes) has type "string", want "integer"`},
		"over int64":            {`{"path":"a","limit":1e30}`, `limit: must be an integer from -9223372036854775808 to 9223372036854775807, not 1e+30`},
		"over uint32":           {`{"path":"a","count":4294967296}`, `count: maximum: 4294967296 is greater than 4294967295`},
		"over int8":             {`{"path":"a","small":300}`, `small: maximum: 300 is greater than 127`},
		"under uint":            {`{"path":"a","count":-1}`, `count: minimum: -1 is less than 0`},
		"over float32":          {`{"path":"a","ratio":1e39}`, `ratio: must be a number from -3.4028234663852886e+38 to 3.4028234663852886e+38, not 1e+39`},
		"pointer over int64":    {`{"path":"a","timeout":1e20}`, `timeout: must be an integer from -9223372036854775808 to 9223372036854775807, not 100000000000000000000`},
		"over float64":          {`{"path":"a","limit":1e400}`, `limit: the number 1e400 is out of range`},
		"unknown long key":      {`{"path":"a","` + long + `":1}`, `unexpected additional properties ["` + strings.Repeat("k", 64) + `…" (100 bytes)]`},
		"invalid UTF-8":         {"{\"path\":\"\xff\"}", `argument "path" is not valid UTF-8`},
		"lone surrogate escape": {`{"path":"\ud800"}`, `argument "path" has an unpaired UTF-16 surrogate escape, which is not a character`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tool.Execute(t.Context(), []byte(tc.args))
			if want := "invalid arguments: " + tc.want; err == nil || err.Error() != want {
				t.Errorf("Execute(%.60s)\n got %v\nwant %s", tc.args, err, want)
			}
		})
	}
}
