package textsafe

import (
	"strconv"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in, want string
	}{
		"plain":             {"main.go", "main.go"},
		"empty":             {"", ""},
		"space":             {"a b.txt", "a b.txt"},
		"path":              {"dir/sub/file.txt", "dir/sub/file.txt"},
		"utf8 letters":      {"héllo-世界.md", "héllo-世界.md"},
		"emoji":             {"🙂.txt", "🙂.txt"},
		"inner quote":       {`say "hi".txt`, `say "hi".txt`},
		"newline":           {"a\nb", `"a\nb"`},
		"carriage return":   {"a\rb", `"a\rb"`},
		"tab":               {"a\tb", `"a\tb"`},
		"ansi escape":       {"\x1b[31mred", `"\x1b[31mred"`},
		"del":               {"a\x7f", `"a\x7f"`},
		"nul":               {"a\x00", `"a\x00"`},
		"c1 control":        {"a\u0085b", `"a\u0085b"`},
		"invalid utf8":      {"bad\xffname", `"bad\xffname"`},
		"truncated utf8":    {"x\xe4\xb8", `"x\xe4\xb8"`},
		"line separator":    {"a\u2028b", `"a\u2028b"`},
		"bidi override":     {"a\u202eb", `"a\u202eb"`},
		"bidi isolate":      {"a\u2067b", `"a\u2067b"`},
		"leading quote":     {`"a\nb"`, `"\"a\\nb\""`},
		"forged list entry": {"x\nfake.txt  12 B", `"x\nfake.txt  12 B"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := Name(tc.in); got != tc.want {
				t.Errorf("Name(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"", "a", "a\nb", "\x1b[2J", "\xff", `"q"`, "a\u202eb", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Name(s)
		if strings.ContainsAny(got, "\n\r\x1b\x00\u2028\u2029\u202e") {
			t.Fatalf("Name(%q) = %q holds a control character", s, got)
		}
		if got == s {
			return
		}
		back, err := strconv.Unquote(got)
		if err != nil || back != s {
			t.Fatalf("Name(%q) = %q does not unquote to the name (%q, %v)", s, got, back, err)
		}
	})
}
