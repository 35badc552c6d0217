package fromproto_test

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agenthost/agenthost/internal/fromproto"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

func TestPermissionsProto(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    sdk.Permissions
		want *toolv1.Permissions
	}{
		"zero": {sdk.Permissions{}, &toolv1.Permissions{}},
		"roots none": {
			sdk.Permissions{Roots: sdk.RootsNone},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_NONE},
		},
		"roots read": {
			sdk.Permissions{Roots: sdk.RootsRead},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_READ},
		},
		"roots read-write": {
			sdk.Permissions{Roots: sdk.RootsReadWrite},
			&toolv1.Permissions{Roots: toolv1.Permissions_ROOTS_READ_WRITE},
		},
		"read": {
			sdk.Permissions{Read: []string{"~/.config/x", "/etc/hosts"}},
			&toolv1.Permissions{ReadPaths: []string{"~/.config/x", "/etc/hosts"}},
		},
		"write": {
			sdk.Permissions{Write: []string{"$TMPDIR"}},
			&toolv1.Permissions{WritePaths: []string{"$TMPDIR"}},
		},
		"network": {sdk.Permissions{Network: true}, &toolv1.Permissions{Network: true}},
		"exec":    {sdk.Permissions{Exec: true}, &toolv1.Permissions{Exec: true}},
		"session file": {
			sdk.Permissions{SessionFile: true},
			&toolv1.Permissions{SessionFile: true},
		},
		"everything": {
			sdk.Permissions{Roots: sdk.RootsRead, Read: []string{"/a"}, Write: []string{"/b", "~/c"}, Network: true, Exec: true, SessionFile: true},
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
			if back := fromproto.Permissions(&decoded); !reflect.DeepEqual(back, tc.p) {
				t.Errorf("fromproto.Permissions(Proto()) after the wire = %#v, want %#v", back, tc.p)
			}
			if back := fromproto.Permissions(got); !reflect.DeepEqual(back, tc.p) {
				t.Errorf("fromproto.Permissions(Proto()) = %#v, want %#v", back, tc.p)
			}
		})
	}
}

func TestPermissionsFromProto(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    *toolv1.Permissions
		want sdk.Permissions
	}{
		"nil":   {nil, sdk.Permissions{}},
		"empty": {&toolv1.Permissions{}, sdk.Permissions{}},
		// Empty lists read as none, so that == and DeepEqual agree on
		// "declares no paths".
		"empty lists": {&toolv1.Permissions{ReadPaths: []string{}, WritePaths: []string{}}, sdk.Permissions{}},
		// A newer plugin's root access is kept for Validate to report,
		// not mistaken for the default.
		"unknown roots": {&toolv1.Permissions{Roots: 7}, sdk.Permissions{Roots: 7}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := fromproto.Permissions(tc.p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("fromproto.Permissions(%v) = %#v, want %#v", tc.p, got, tc.want)
			}
		})
	}
}

// The conversions copy the path lists: neither side sees the other's
// later changes.
func TestPermissionsConversionsCopy(t *testing.T) {
	t.Parallel()
	p := sdk.Permissions{Read: []string{"/a"}, Write: []string{"/b"}}
	pb := p.Proto()
	p.Read[0], p.Write[0] = "/changed", "/changed"
	if pb.GetReadPaths()[0] != "/a" || pb.GetWritePaths()[0] != "/b" {
		t.Errorf("Proto() shares its lists with the Permissions: %v", pb)
	}

	back := fromproto.Permissions(pb)
	pb.ReadPaths[0], pb.WritePaths[0] = "/changed", "/changed"
	if back.Read[0] != "/a" || back.Write[0] != "/b" {
		t.Errorf("fromproto.Permissions shares its lists with the message: %#v", back)
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
		t.Errorf("sdk.Permissions = %v, want unset", desc.GetPermissions())
	}
	got := fromproto.Permissions(desc.GetPermissions())
	if !reflect.DeepEqual(got, sdk.Permissions{}) {
		t.Errorf("an old description declares %#v, want the zero Permissions", got)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("an old description's declaration is invalid: %v", err)
	}
	if s := got.String(); s != "nothing beyond the defaults" {
		t.Errorf("an old description's declaration reads %q", s)
	}

}
