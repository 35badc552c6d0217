package main

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// The bash plugin declares that it runs programs that read and write in the
// roots and in the temporary directory; it does not declare the network.
func TestDeclaredPermissions(t *testing.T) {
	t.Parallel()
	want := sdk.Permissions{Roots: sdk.RootsReadWrite, Write: []string{"$TMPDIR"}, Exec: true}
	desc := plugintest.Describe(t, "./plugins/bash")
	if got := sdk.PermissionsFromProto(desc.GetPermissions()); !reflect.DeepEqual(got, want) {
		t.Errorf("the bash plugin declares %q, want %q", got, want)
	}
}
