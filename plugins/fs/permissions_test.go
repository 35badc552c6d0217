package main

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// The fs plugin declares that it reads and writes in the roots, and nothing
// more: no other path, no network, no programs.
func TestDeclaredPermissions(t *testing.T) {
	t.Parallel()
	want := sdk.Permissions{Roots: sdk.RootsReadWrite}
	desc := plugintest.Describe(t, "./plugins/fs")
	if got := sdk.PermissionsFromProto(desc.GetPermissions()); !reflect.DeepEqual(got, want) {
		t.Errorf("the fs plugin declares %q, want %q", got, want)
	}
}
