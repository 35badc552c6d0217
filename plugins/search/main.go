// Command agenthost-plugin-search serves the search tools: search_text
// finds lines in files, search_files finds files by a glob.
package main

import "github.com/agenthost/agenthost/sdk"

func main() {
	sdk.ServePlugin(sdk.Plugin{
		Tools: []sdk.Tool{searchText, searchFiles},
		// The tools read in the roots and write nothing.
		Permissions: sdk.Permissions{Roots: sdk.RootsRead},
	})
}
