package plugintest

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/internal/goplugin"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// Describe builds the plugin of pkg, a package path relative to the
// module root such as "./plugins/fs", starts it over go-plugin as a host
// does, and returns what its Describe answers: the description exactly
// as the plugin sends it, before any host reads it. The binary is built
// into the test's temporary directory, so that a package needs no
// TestMain to call Describe; the process is stopped before Describe
// returns.
func Describe(t testing.TB, pkg string) *toolv1.DescribeResponse {
	t.Helper()
	binary := filepath.Join(t.TempDir(), filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", binary, pkg)
	build.Dir = Root()
	if output, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, output)
	}

	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  goplugin.Handshake,
		VersionedPlugins: goplugin.PluginSets(),
		Cmd:              exec.Command(binary),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           hclog.NewNullLogger(),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("starting %s: %v", pkg, err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		t.Fatalf("dispensing %s: %v", pkg, err)
	}
	conn, ok := raw.(*goplugin.Client)
	if !ok {
		t.Fatalf("%s: unexpected plugin client %T", pkg, raw)
	}
	resp, err := conn.Describe(t.Context(), &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	if err != nil {
		t.Fatalf("describing %s: %v", pkg, err)
	}
	return resp
}
