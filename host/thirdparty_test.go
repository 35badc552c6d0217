package host_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// TestThirdPartyPluginIsLikeABuiltIn puts the example plugin, written as an
// outsider would, beside a built-in one, and treats both the same way.
func TestThirdPartyPluginIsLikeABuiltIn(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "clock", "fs"), nil)

	builtIn, thirdParty := "read_file", "current_time"
	infos := map[string]host.ToolInfo{}
	for _, info := range reg.Tools() {
		infos[info.Name] = info
	}
	if got := infos[thirdParty]; got.Plugin != "agenthost-plugin-clock" || !got.Enabled || !got.Annotations.ReadOnly || !got.Annotations.OpenWorld {
		t.Errorf("%s: %+v", thirdParty, got)
	}
	// The built-ins register first, whatever the file names' order.
	if got := reg.ToolNames(); !slices.Equal(got, append(slices.Clone(fsTools), thirdParty)) {
		t.Errorf("ToolNames() = %v", got)
	}

	for _, name := range []string{builtIn, thirdParty} {
		if !hasSchema(reg, name) {
			t.Errorf("%s is not in EnabledSchemas", name)
		}
		if err := reg.Disable(name); err != nil {
			t.Fatal(err)
		}
		if hasSchema(reg, name) || reg.IsToolEnabled(name) {
			t.Errorf("%s is still offered after Disable", name)
		}
		if got, want := reg.Execute(t.Context(), name, nil), "Error: tool not available: "+name+" is disabled"; got != want {
			t.Errorf("disabled %s: %q", name, got)
		}
		if err := reg.Enable(name); err != nil {
			t.Fatal(err)
		}
	}

	if got := call(t, reg, thirdParty, `{"timezone":"Asia/Tokyo"}`); !strings.Contains(got, "JST (+09:00)") {
		t.Errorf("current_time in Tokyo = %q", got)
	}
	if got, want := reg.Execute(t.Context(), thirdParty, []byte(`{"timezone":"Mars/Olympus"}`)), `Error executing current_time: unknown time zone "Mars/Olympus"`; got != want {
		t.Errorf("bad zone = %q, want %q", got, want)
	}
	if got := reg.Execute(t.Context(), builtIn, []byte(`{"path":"testdata/hello.txt"}`)); got != "hello from testdata\n" {
		t.Errorf("read_file = %q", got)
	}
}
