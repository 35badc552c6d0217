// Command agenthost-plugin-session serves the session tools.
package main

import "github.com/agenthost/agenthost/sdk"

func main() {
	sdk.ServePlugin(sdk.Plugin{
		Tools: []sdk.Tool{saveSessionContext},
		// save_session_context writes the host's session file, and touches
		// nothing in the roots.
		Permissions: sdk.Permissions{Roots: sdk.RootsNone, SessionFile: true},
	})
}
