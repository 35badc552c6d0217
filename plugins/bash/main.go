// Command agenthost-plugin-bash serves run_bash, which runs shell
// commands. The tool is opt-in: the host registers it disabled.
package main

import "github.com/agenthost/agenthost/sdk"

func main() {
	// A command's watchdog is this program too; see watchdogArg.
	runIfWatchdog()
	sdk.ServePlugin(sdk.Plugin{
		Tools: []sdk.Tool{runBash},
		// run_bash runs bash in the roots, and commands use the
		// temporary directory.
		Permissions: sdk.Permissions{Roots: sdk.RootsReadWrite, Exec: true, Write: []string{"$TMPDIR"}},
	})
}
