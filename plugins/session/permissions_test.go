package main

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// The session plugin declares the session file and nothing else, not even
// the roots.
func TestDeclaredPermissions(t *testing.T) {
	t.Parallel()
	want := sdk.Permissions{Roots: sdk.RootsNone, SessionFile: true}
	desc := plugintest.Describe(t, "./plugins/session")
	if got := sdk.PermissionsFromProto(desc.GetPermissions()); !reflect.DeepEqual(got, want) {
		t.Errorf("the session plugin declares %q, want %q", got, want)
	}
}
