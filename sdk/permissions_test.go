package sdk

import (
	"strings"
	"testing"
)

func TestRootAccessString(t *testing.T) {
	t.Parallel()
	tests := map[RootAccess]string{
		RootsDefault:   "default",
		RootsNone:      "none",
		RootsRead:      "read",
		RootsReadWrite: "read-write",
		4:              "RootAccess(4)",
		-1:             "RootAccess(-1)",
	}
	for r, want := range tests {
		if got := r.String(); got != want {
			t.Errorf("RootAccess(%d).String() = %q, want %q", int(r), got, want)
		}
	}
}

func TestPermissionsString(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    Permissions
		want string
	}{
		"zero":                {Permissions{}, "nothing beyond the defaults"},
		"empty lists":         {Permissions{Read: []string{}, Write: []string{}}, "nothing beyond the defaults"},
		"roots none":          {Permissions{Roots: RootsNone}, "no roots"},
		"roots read":          {Permissions{Roots: RootsRead}, "roots read-only"},
		"roots read-write":    {Permissions{Roots: RootsReadWrite}, "roots read-write"},
		"unknown roots":       {Permissions{Roots: 9}, "roots RootAccess(9)"},
		"network alone":       {Permissions{Network: true}, "network"},
		"exec alone":          {Permissions{Exec: true}, "exec"},
		"session file alone":  {Permissions{SessionFile: true}, "session file"},
		"the brief's example": {Permissions{Roots: RootsRead, Read: []string{"~/.config/x"}, Network: true, Exec: true}, "roots read-only, read ~/.config/x, network, exec"},
		"everything, in order": {
			Permissions{Roots: RootsNone, Read: []string{"/etc/ssl", "~/.netrc"}, Write: []string{"$TMPDIR", "$TMPDIR/cache"}, Network: true, Exec: true, SessionFile: true},
			"no roots, read /etc/ssl, read ~/.netrc, write $TMPDIR, write $TMPDIR/cache, network, exec, session file",
		},
		"a path with a space": {Permissions{Read: []string{"/Library/Application Support"}}, "read /Library/Application Support"},
		"a path with a comma": {Permissions{Read: []string{"/x, network"}}, `read "/x, network"`},
		"a forged line":       {Permissions{Write: []string{"/x\nroots read-only"}}, `write "/x\nroots read-only"`},
		"an escape":           {Permissions{Read: []string{"/\x1b[2Kx"}}, `read "/\x1b[2Kx"`},
		"a leading quote":     {Permissions{Read: []string{`"/x"`}}, `read "\"/x\""`},
		"an empty path":       {Permissions{Read: []string{""}}, `read ""`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPermissionsValidate(t *testing.T) {
	t.Parallel()
	valid := map[string]Permissions{
		"zero":           {},
		"every root":     {Roots: RootsReadWrite},
		"absolute":       {Read: []string{"/etc/ssl/certs", "/"}},
		"home":           {Read: []string{"~/.config/x", "~/"}},
		"tmpdir":         {Write: []string{"$TMPDIR", "$TMPDIR/x"}},
		"dots in a name": {Read: []string{"/a/..b/c..", "~/...", "$TMPDIR/.x"}},
		"all at once":    {Roots: RootsNone, Read: []string{"/a"}, Write: []string{"~/b"}, Network: true, Exec: true, SessionFile: true},
	}
	for name, p := range valid {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: Validate(%#v) = %v, want nil", name, p, err)
		}
	}

	invalid := map[string]struct {
		p    Permissions
		want string
	}{
		"unknown roots":         {Permissions{Roots: 4}, "permissions: unknown root access 4"},
		"negative roots":        {Permissions{Roots: -1}, "permissions: unknown root access -1"},
		"relative":              {Permissions{Read: []string{"config/x"}}, `permissions: read path "config/x" is not absolute and does not start with "~/" or "$TMPDIR"`},
		"dot relative":          {Permissions{Write: []string{"./x"}}, `permissions: write path "./x" is not absolute`},
		"empty":                 {Permissions{Read: []string{""}}, `permissions: read path "" is not absolute`},
		"bare tilde":            {Permissions{Read: []string{"~"}}, `read path "~" is not absolute`},
		"another user's home":   {Permissions{Read: []string{"~root/x"}}, `read path "~root/x" is not absolute`},
		"another variable":      {Permissions{Write: []string{"$HOME/x"}}, `write path "$HOME/x" is not absolute`},
		"tmpdir glued":          {Permissions{Write: []string{"$TMPDIRx"}}, `write path "$TMPDIRx" is not absolute`},
		"braced tmpdir":         {Permissions{Write: []string{"${TMPDIR}/x"}}, `write path "${TMPDIR}/x" is not absolute`},
		"climbs out of home":    {Permissions{Read: []string{"~/../other"}}, `permissions: read path "~/../other" holds a ".." element`},
		"climbs out of tmpdir":  {Permissions{Write: []string{"$TMPDIR/.."}}, `write path "$TMPDIR/.." holds a ".." element`},
		"dot dot in absolute":   {Permissions{Read: []string{"/a/../etc"}}, `read path "/a/../etc" holds a ".." element`},
		"NUL":                   {Permissions{Read: []string{"/a\x00b"}}, `read path "/a\x00b" holds a NUL byte`},
		"later entry is wrong":  {Permissions{Read: []string{"/ok", "bad"}}, `read path "bad"`},
		"write checked as well": {Permissions{Read: []string{"/ok"}, Write: []string{"bad"}}, `write path "bad"`},
	}
	for name, tc := range invalid {
		err := tc.p.Validate()
		if err == nil {
			t.Errorf("%s: Validate(%#v) = nil, want an error", name, tc.p)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %q, want it to contain %q", name, err, tc.want)
		}
	}
}
