package main

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/internal/fromproto"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// The clock, the example tool authors copy, declares honestly that it
// touches no file, in the roots or out of them.
func TestDeclaredPermissions(t *testing.T) {
	t.Parallel()
	want := sdk.Permissions{Roots: sdk.RootsNone}
	desc := plugintest.Describe(t, "./examples/clock")
	if got := fromproto.Permissions(desc.GetPermissions()); !reflect.DeepEqual(got, want) {
		t.Errorf("the clock plugin declares %q, want %q", got, want)
	}
}
