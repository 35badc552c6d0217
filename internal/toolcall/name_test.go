package toolcall

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name string
		want bool
	}{
		"one letter":          {"a", true},
		"64 characters":       {strings.Repeat("x", 64), true},
		"underscore":          {"read_file", true},
		"hyphen":              {"a-b", true},
		"digits and capitals": {"Tool9", true},
		"empty":               {"", false},
		"65 characters":       {strings.Repeat("x", 65), false},
		"space":               {"a b", false},
		"dot":                 {"a.b", false},
		"non-ASCII letter":    {"é", false},
		"trailing newline":    {"a\n", false},
		"slash":               {"a/b", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := ValidName(tc.name); got != tc.want {
				t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}
