// Command kit serves the test plugin of package kit, for the tests that
// load it as a binary.
package main

import (
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/sdktest/internal/kit"
)

func main() { sdk.ServePlugin(kit.Plugin) }
