package toolcall

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		max  int
		want string
	}{
		"short":           {"hello", 5, "hello"},
		"cut":             {"hello world", 5, "hello... [6 bytes cut]"},
		"rune boundary":   {"aé", 2, "a... [2 bytes cut]"},
		"three-byte rune": {"ab€c", 3, "ab... [4 bytes cut]"},
		"invalid bytes":   {"ab\x80\x80\x80\x80", 3, "ab\x80... [3 bytes cut]"},
		"empty":           {"", 0, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := Bound(tc.in, tc.max); got != tc.want {
				t.Errorf("Bound(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
	long := strings.Repeat("é", 10<<20)
	got := Bound(long, MaxMessage)
	if !utf8.ValidString(got) || len(got) > MaxMessage+32 || !strings.HasSuffix(got, "... [20967424 bytes cut]") {
		t.Errorf("Bound of 20 MiB: %d bytes ending %q", len(got), got[len(got)-30:])
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	if got := Quote("a\nb"); got != `"a\nb"` {
		t.Errorf("Quote = %s", got)
	}
	long := strings.Repeat("k", MaxQuoted) + "é" + strings.Repeat("k", 1000)
	if got, want := Quote(long), `"`+strings.Repeat("k", MaxQuoted)+`…" (1066 bytes)`; got != want {
		t.Errorf("Quote(long) = %s, want %s", got, want)
	}
}

func TestCheckUnicode(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args, want string
	}{
		"plain":                {`{"path":"a.txt"}`, ""},
		"escapes":              {`{"path":"a\n\"\\\u00e9"}`, ""},
		"surrogate pair":       {`{"text":"\ud83d\ude00"}`, ""},
		"escaped backslash u":  {`{"text":"\\ud800"}`, ""},
		"literal U+FFFD":       {`{"text":"\ufffd�"}`, ""},
		"invalid UTF-8":        {"{\"a\":1,\"content\":\"x\xffy\"}", `invalid arguments: argument "content" is not valid UTF-8`},
		"in an array":          {"{\"paths\":[\"ok\",\"x\xc3\"]}", `invalid arguments: argument "paths" is not valid UTF-8`},
		"lone high surrogate":  {`{"path":"a\ud800b"}`, `invalid arguments: argument "path" has an unpaired UTF-16 surrogate escape, which is not a character`},
		"lone low surrogate":   {`{"path":"\uDC00"}`, `invalid arguments: argument "path" has an unpaired UTF-16 surrogate escape, which is not a character`},
		"high then high":       {`{"path":"\ud800\ud800"}`, `invalid arguments: argument "path" has an unpaired UTF-16 surrogate escape, which is not a character`},
		"high at the end":      {`{"path":"\ud800"}`, `invalid arguments: argument "path" has an unpaired UTF-16 surrogate escape, which is not a character`},
		"in a name":            {"{\"pa\xffth\":1}", `invalid arguments: an argument name is not valid UTF-8: "pa\xffth"`},
		"surrogate in a name":  {`{"a\ud800":1}`, `invalid arguments: an argument name has an unpaired UTF-16 surrogate escape, which is not a character: "a\\ud800"`},
		"not an object":        {"[\"\xff\"]", ""},
		"not JSON":             {"{\"a\":\"\xff", ""},
		"huge name is bounded": {"{\"" + strings.Repeat("k", 1000) + "\":\"\xff\"}", `invalid arguments: argument "` + strings.Repeat("k", MaxQuoted) + `…" (1000 bytes) is not valid UTF-8`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := CheckUnicode([]byte(tc.args))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckUnicode(%q)\n got %q\nwant %q", tc.args, got, tc.want)
			}
		})
	}
}

// FuzzCheckUnicode: arguments that pass hold nothing that JSON decoding
// would turn into U+FFFD; a refusal is bounded and printable.
func FuzzCheckUnicode(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\\ud800"}`, `{"a":["\udc00"]}`, `{"a\ud800":1}`, `{"a":{"b":"\uD800\uDC00"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		err := CheckUnicode(args)
		if err != nil {
			if msg := err.Error(); len(msg) > 300 || !utf8.ValidString(msg) {
				t.Fatalf("CheckUnicode(%q) = %q", args, msg)
			}
			return
		}
		var v any
		if json.Unmarshal(args, &v) != nil {
			return
		}
		if _, ok := v.(map[string]any); !ok {
			return
		}
		// Every U+FFFD in the decoded value was sent as one.
		sent := strings.Count(string(args), "\ufffd") + strings.Count(strings.ToLower(string(args)), `\ufffd`)
		decoded, _ := json.Marshal(v)
		if got := strings.Count(string(decoded), "\ufffd"); got > sent {
			t.Fatalf("CheckUnicode(%q) passed, but decoding made %d U+FFFD of %d", args, got, sent)
		}
	})
}
