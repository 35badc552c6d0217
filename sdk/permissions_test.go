package sdk

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agenthost/agenthost/sdk/toolv1"
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

func TestPermissionsProto(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    Permissions
		want *toolv1.Permissions
	}{
		"zero": {Permissions{}, &toolv1.Permissions{}},
		"roots none": {
			Permissions{Roots: RootsNone},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_NONE},
		},
		"roots read": {
			Permissions{Roots: RootsRead},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_READ},
		},
		"roots read-write": {
			Permissions{Roots: RootsReadWrite},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_READ_WRITE},
		},
		"read": {
			Permissions{Read: []string{"~/.config/x", "/etc/hosts"}},
			&toolv1.Permissions{ReadPaths: []string{"~/.config/x", "/etc/hosts"}},
		},
		"write": {
			Permissions{Write: []string{"$TMPDIR"}},
			&toolv1.Permissions{WritePaths: []string{"$TMPDIR"}},
		},
		"network": {Permissions{Network: true}, &toolv1.Permissions{Network: true}},
		"exec":    {Permissions{Exec: true}, &toolv1.Permissions{Exec: true}},
		"session file": {
			Permissions{SessionFile: true},
			&toolv1.Permissions{SessionFile: true},
		},
		"everything": {
			Permissions{Roots: RootsRead, Read: []string{"/a"}, Write: []string{"/b", "~/c"}, Network: true, Exec: true, SessionFile: true},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_READ, ReadPaths: []string{"/a"}, WritePaths: []string{"/b", "~/c"}, Network: true, Exec: true, SessionFile: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := tc.p.Proto()
			if !proto.Equal(got, tc.want) {
				t.Errorf("Proto() = %v, want %v", got, tc.want)
			}
			// Across the wire and back, it is the same declaration.
			data, err := proto.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var decoded toolv1.Permissions
			if err := proto.Unmarshal(data, &decoded); err != nil {
				t.Fatal(err)
			}
			if back := PermissionsFromProto(&decoded); !reflect.DeepEqual(back, tc.p) {
				t.Errorf("PermissionsFromProto(Proto()) after the wire = %#v, want %#v", back, tc.p)
			}
			if back := PermissionsFromProto(got); !reflect.DeepEqual(back, tc.p) {
				t.Errorf("PermissionsFromProto(Proto()) = %#v, want %#v", back, tc.p)
			}
		})
	}
}

func TestPermissionsFromProto(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    *toolv1.Permissions
		want Permissions
	}{
		"nil":   {nil, Permissions{}},
		"empty": {&toolv1.Permissions{}, Permissions{}},
		// Empty lists read as none, so that == and DeepEqual agree on
		// "declares no paths".
		"empty lists": {&toolv1.Permissions{ReadPaths: []string{}, WritePaths: []string{}}, Permissions{}},
		// A newer plugin's root access is kept for Validate to report,
		// not mistaken for the default.
		"unknown roots": {&toolv1.Permissions{Roots: 7}, Permissions{Roots: 7}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := PermissionsFromProto(tc.p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PermissionsFromProto(%v) = %#v, want %#v", tc.p, got, tc.want)
			}
		})
	}
}

// The conversions copy the path lists: neither side sees the other's
// later changes.
func TestPermissionsConversionsCopy(t *testing.T) {
	t.Parallel()
	p := Permissions{Read: []string{"/a"}, Write: []string{"/b"}}
	pb := p.Proto()
	p.Read[0], p.Write[0] = "/changed", "/changed"
	if pb.GetReadPaths()[0] != "/a" || pb.GetWritePaths()[0] != "/b" {
		t.Errorf("Proto() shares its lists with the Permissions: %v", pb)
	}

	back := PermissionsFromProto(pb)
	pb.ReadPaths[0], pb.WritePaths[0] = "/changed", "/changed"
	if back.Read[0] != "/a" || back.Write[0] != "/b" {
		t.Errorf("PermissionsFromProto shares its lists with the message: %#v", back)
	}
}

// A plugin older than protocol 1.3 sends a description without the
// permissions field: it reads as the zero declaration.
func TestOldDescriptionDeclaresNothing(t *testing.T) {
	t.Parallel()
	// A protocol 1.2 description, field by field, as such a plugin
	// encodes it: fields 1 to 4 and nothing more.
	var old []byte
	old = protowire.AppendTag(old, 1, protowire.BytesType)
	old = protowire.AppendString(old, "agenthost-plugin-old")
	old = protowire.AppendTag(old, 2, protowire.BytesType)
	old = protowire.AppendString(old, "1.0")
	old = protowire.AppendTag(old, 3, protowire.VarintType)
	old = protowire.AppendVarint(old, 2)
	spec, err := proto.Marshal(&toolv1.ToolSpec{Name: "old_tool", ParametersSchema: []byte(`{"type":"object"}`)})
	if err != nil {
		t.Fatal(err)
	}
	old = protowire.AppendTag(old, 4, protowire.BytesType)
	old = protowire.AppendBytes(old, spec)

	var desc toolv1.DescribeResponse
	if err := proto.Unmarshal(old, &desc); err != nil {
		t.Fatal(err)
	}
	if desc.GetPluginName() != "agenthost-plugin-old" || desc.GetProtocolMinor() != 2 || len(desc.GetTools()) != 1 {
		t.Fatalf("the old description decoded as %v", &desc)
	}
	if desc.GetPermissions() != nil {
		t.Errorf("Permissions = %v, want unset", desc.GetPermissions())
	}
	got := PermissionsFromProto(desc.GetPermissions())
	if !reflect.DeepEqual(got, Permissions{}) {
		t.Errorf("an old description declares %#v, want the zero Permissions", got)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("an old description's declaration is invalid: %v", err)
	}
	if s := got.String(); s != "nothing beyond the defaults" {
		t.Errorf("an old description's declaration reads %q", s)
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
