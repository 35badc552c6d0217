// Command exitplugin fails at start-up, before any handshake.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "exitplugin: missing configuration")
	os.Exit(1)
}
