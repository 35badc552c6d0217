// Command agenthost-plugin-fs serves the file system tools.
package main

import "github.com/agenthost/agenthost/sdk"

func main() {
	sdk.Serve(readFile, writeFile)
}
