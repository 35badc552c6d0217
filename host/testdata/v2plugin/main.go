// Command v2plugin speaks only protocol version 2, which this host does
// not know.
package main

import (
	"os"

	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

func main() {
	code, _ := wire.Serve(toolv1.UnimplementedToolPluginServer{}, wire.ServeOptions{Version: 2})
	os.Exit(code)
}
