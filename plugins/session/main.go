// Command agenthost-plugin-session serves the session tools.
package main

import "github.com/agenthost/agenthost/sdk"

func main() {
	sdk.Serve(saveSessionContext)
}
