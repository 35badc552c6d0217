// Command agenthost-plugin-bash serves run_bash, which runs shell
// commands. The tool is opt-in: the host registers it disabled.
package main

import "github.com/agenthost/agenthost/sdk"

func main() {
	// A command's watchdog is this program too; see watchdogArg.
	runIfWatchdog()
	sdk.Serve(runBash)
}
