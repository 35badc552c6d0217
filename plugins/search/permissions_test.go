package main

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// The search plugin declares that it reads in the roots, and nothing more:
// it writes nothing, anywhere.
func TestDeclaredPermissions(t *testing.T) {
	t.Parallel()
	want := sdk.Permissions{Roots: sdk.RootsRead}
	desc := plugintest.Describe(t, "./plugins/search")
	if got := sdk.PermissionsFromProto(desc.GetPermissions()); !reflect.DeepEqual(got, want) {
		t.Errorf("the search plugin declares %q, want %q", got, want)
	}
}
